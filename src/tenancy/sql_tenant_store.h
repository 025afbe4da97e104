// SqlTenantStore: TenantStore over a SqlDatabase. The one implementation of
// every query, so SQLite and PostgreSQL behave alike; the backends differ only
// in connections, transactions and error mapping (sqlite_tenant_store.cc,
// postgres_tenant_store.cc). Thread-safe: the database pools connections.
#pragma once

#include <memory>
#include <string>

#include "tenancy/sql_database.h"
#include "tenancy/tenant_store.h"

namespace pagoda::tenancy {

class SqlTenantStore final : public TenantStore {
 public:
  explicit SqlTenantStore(std::unique_ptr<SqlDatabase> db);

  const std::string& Describe() const override { return db_->Describe(); }
  Result<int> SchemaVersion() override;
  Result<int64_t> Generation() override;

  Result<Tenant> CreateTenant(const Tenant& tenant) override;
  Result<Tenant> GetTenant(std::string_view id) override;
  Result<std::vector<Tenant>> ListTenants() override;
  Status UpdateTenant(const Tenant& tenant) override;

  Status InsertKey(const ApiKey& key) override;
  Result<ApiKey> FindKeyByHash(std::string_view hash_hex) override;
  Result<ApiKey> GetKey(std::string_view key_id) override;
  Result<std::vector<ApiKey>> ListKeys(std::string_view tenant_id) override;
  Status RevokeKey(std::string_view key_id, int64_t at_ms) override;
  Status RotateKey(std::string_view old_key_id, const ApiKey& new_key, int64_t old_key_ends_at,
                   int64_t now_ms) override;

  Status SetLimits(const LimitRule& rule) override;
  Result<LimitRule> GetLimits(LimitScope scope, std::string_view scope_id, std::string_view model) override;
  Result<std::vector<LimitRule>> ListLimits(std::string_view tenant_id) override;
  Status DeleteLimits(LimitScope scope, std::string_view scope_id, std::string_view model) override;

  Status SetReservation(const Reservation& r) override;
  Status DeleteReservation(std::string_view tenant_id, std::string_view model) override;
  Result<std::vector<Reservation>> ListReservations() override;

  Status SetPrice(const Price& p) override;
  Status DeletePrice(std::string_view model) override;
  Result<std::vector<Price>> ListPrices() override;

  Status AppendUsage(std::span<const UsageRecord> records) override;
  Result<std::vector<UsageRow>> QueryUsage(const UsageQuery& q) override;
  Result<std::vector<UsageRecord>> ListUsage(std::string_view tenant_id, int64_t from_ms, int64_t to_ms,
                                             int64_t limit) override;
  Status AddReplicaHours(const ReplicaHours& h) override;
  Result<std::vector<UsageRow>> QueryReplicaHours(const UsageQuery& q) override;

 private:
  // Prefixes "<store>: <op>: " to a failure.
  Status Fail(const char* op, const Status& st) const;
  template <class T>
  Result<T> Fail(const char* op, const Result<T>& r) const {
    return Fail(op, r.status());
  }
  // A write transaction that also bumps the generation counter.
  Status AdminWrite(const char* op, const std::function<Status(SqlConnection&)>& fn);

  std::unique_ptr<SqlDatabase> db_;
};

}  // namespace pagoda::tenancy
