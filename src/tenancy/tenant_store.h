// TenantStore: the control plane's persistent state behind one interface:
// tenants, API keys (hashes only), limits, reservations, prices, the usage
// ledger's rows and replica-hours. Implementations: the embedded SQLite store
// (the default; sqlite_tenant_store.h) and PostgreSQL for several gateway
// processes (postgres_tenant_store.h). Both share one schema and one set of
// queries (sql_tenant_store.h) and are thread-safe: any thread may call any
// method.
//
// Errors are values that name the store and the operation ("sqlite store
// /var/lib/pagoda.db: FindKeyByHash: database is locked"), never a key secret.
// Codes: InvalidArgument (bad input), NotFound, FailedPrecondition (store
// unusable: read-only, newer schema), IoError (store unreachable / locked;
// callers fail closed), DataLoss (corrupt file).
//
// Generation(): a counter bumped in the same transaction as every change to
// tenants, keys, limits, reservations or prices (not usage). Reading it is one
// indexed single-row read, cheap enough per request, so a cache validated by
// it (tenant_cache.h) sees a revocation made by another process on the very
// next request.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tenancy/records.h"

namespace pagoda::tenancy {

class TenantStore {
 public:
  virtual ~TenantStore() = default;

  // "sqlite:/path/to.db" or "postgresql://host:port/db" (never a password).
  virtual const std::string& Describe() const = 0;

  // The schema version the store holds (after migrations).
  virtual Result<int> SchemaVersion() = 0;
  virtual Result<int64_t> Generation() = 0;

  // Tenants. CreateTenant fills an empty id ("ten_<hex>") and created_at
  // (when 0) and returns the stored tenant; an existing id -> InvalidArgument.
  virtual Result<Tenant> CreateTenant(const Tenant& tenant) = 0;
  virtual Result<Tenant> GetTenant(std::string_view id) = 0;
  virtual Result<std::vector<Tenant>> ListTenants() = 0;
  // Replaces name, plan, weight, sharing, dedicated deployment, disabled and
  // the workload classes (max_class, default_class).
  virtual Status UpdateTenant(const Tenant& tenant) = 0;

  // Keys. InsertKey: the tenant must exist; id and hash must be new.
  virtual Status InsertKey(const ApiKey& key) = 0;
  // By the hash index; NotFound when absent. Revoked and expired keys are
  // returned too (callers decide; see tenant_cache.h).
  virtual Result<ApiKey> FindKeyByHash(std::string_view hash_hex) = 0;
  virtual Result<ApiKey> GetKey(std::string_view key_id) = 0;
  virtual Result<std::vector<ApiKey>> ListKeys(std::string_view tenant_id) = 0;
  // Sets revoked_at (once; revoking again keeps the first time).
  virtual Status RevokeKey(std::string_view key_id, int64_t at_ms) = 0;
  // One transaction: inserts `new_key` and ends `old_key_id` at
  // `old_key_ends_at` (revoked then when it is <= now_ms, otherwise its
  // expires_at is brought forward to it: a grace period).
  virtual Status RotateKey(std::string_view old_key_id, const ApiKey& new_key, int64_t old_key_ends_at,
                           int64_t now_ms) = 0;

  // Limits, one LimitSet per (scope, scope_id, model); Set replaces.
  virtual Status SetLimits(const LimitRule& rule) = 0;
  virtual Result<LimitRule> GetLimits(LimitScope scope, std::string_view scope_id, std::string_view model) = 0;
  // Every rule of a tenant: its own and its keys'. "" = every rule.
  virtual Result<std::vector<LimitRule>> ListLimits(std::string_view tenant_id) = 0;
  virtual Status DeleteLimits(LimitScope scope, std::string_view scope_id, std::string_view model) = 0;

  virtual Status SetReservation(const Reservation& r) = 0;
  virtual Status DeleteReservation(std::string_view tenant_id, std::string_view model) = 0;
  virtual Result<std::vector<Reservation>> ListReservations() = 0;

  virtual Status SetPrice(const Price& p) = 0;
  virtual Status DeletePrice(std::string_view model) = 0;
  virtual Result<std::vector<Price>> ListPrices() = 0;

  // Usage: all records in ONE transaction (all or none). A record whose
  // request_id is already stored is skipped, so a retried batch never counts
  // twice.
  virtual Status AppendUsage(std::span<const UsageRecord> records) = 0;
  // Aggregated rows, ordered by the group columns (tenant, key, model, day,
  // service tier).
  virtual Result<std::vector<UsageRow>> QueryUsage(const UsageQuery& q) = 0;
  // Raw records in [from_ms, to_ms) of one tenant ("" = all), oldest first,
  // at most `limit` (for export and tests).
  virtual Result<std::vector<UsageRecord>> ListUsage(std::string_view tenant_id, int64_t from_ms, int64_t to_ms,
                                                     int64_t limit) = 0;
  virtual Status AddReplicaHours(const ReplicaHours& h) = 0;
  // Replica-hours grouped like QueryUsage (key grouping ignored: key_id "").
  virtual Result<std::vector<UsageRow>> QueryReplicaHours(const UsageQuery& q) = 0;
};

struct StoreOptions {
  // SQLite: how long a write waits for another process's lock before IoError.
  int busy_timeout_ms = 5000;
  // SQLite: open read-only (reports, backups); writes fail, no migrations.
  bool read_only = false;
  // Pooled connections (readers for SQLite; all for PostgreSQL).
  int pool_size = 4;
  // PostgreSQL: connect timeout in seconds.
  int connect_timeout_s = 5;
};

// "sqlite:///abs/path.db", "sqlite:relative.db" or a plain path -> SQLite;
// "postgresql://..." / "postgres://..." -> PostgreSQL. Runs pending schema
// migrations (unless read_only).
Result<std::unique_ptr<TenantStore>> OpenTenantStore(const std::string& url, const StoreOptions& options = {});

// The same URL as a raw SqlDatabase, opened and migrated, for the other
// tables of the store (the batch store, batch/batch_store.h).
class SqlDatabase;
Result<std::unique_ptr<SqlDatabase>> OpenStoreDatabase(const std::string& url, const StoreOptions& options = {});

}  // namespace pagoda::tenancy
