// Control-plane records: plain values shared by the tenant store, the usage
// ledger, the rate limiter and the gateway. No behaviour beyond validation
// and enum names. Times are unix milliseconds (int64); 0 means "unset"
// wherever a field says so.
//
// Zero retention by type: none of these records has a field for prompt or
// completion text, tool arguments or key secrets. Strings are ids, model names
// and deployment names supplied by the operator's configuration.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/workload_class.h"

namespace pagoda::tenancy {

enum class PlanKind {
  kServerless,   // shared replicas, best effort, fair share by weight
  kProvisioned,  // reserved tokens per second on a model (see Reservation)
  kDedicated,    // routed only to the tenant's own deployment, replica-hours
};
// "serverless" | "provisioned" | "dedicated".
const char* PlanKindName(PlanKind plan);
Result<PlanKind> ParsePlanKind(std::string_view name);

struct Tenant {
  std::string id;    // "ten_<hex>" (generated) or an operator slug [a-z0-9_-]{1,64}
  std::string name;  // display name, at most 256 bytes of printable UTF-8
  PlanKind plan = PlanKind::kServerless;
  double weight = 1.0;  // fair-share weight, > 0
  bool share_cache_across_keys = false;  // prefix cache shared by the tenant's keys
  std::string dedicated_deployment;      // the deployment of a kDedicated tenant
  bool disabled = false;
  int64_t created_at = 0;
  // The most urgent workload class the tenant's keys may use; nullopt = its
  // plan's (PlanMaxClass). A key may override it (ApiKey::max_class).
  std::optional<WorkloadClass> max_class = std::nullopt;
  // The class of a request that names none (clamped to the key's max).
  WorkloadClass default_class = WorkloadClass::kInteractive;
};

// The max class of a plan whose tenant sets none: serverless -> interactive;
// provisioned and dedicated -> realtime.
WorkloadClass PlanMaxClass(PlanKind plan);

struct ApiKey {
  std::string id;         // "key_<hex>": public, safe to log and to show
  std::string tenant_id;
  std::string name;
  std::string hash;       // hex SHA-256 (or HMAC-SHA256 with the pepper) of the secret
  std::vector<std::string> models;  // model names / aliases the key may use; empty = all
  int64_t created_at = 0;
  int64_t expires_at = 0;  // 0 = never
  int64_t revoked_at = 0;  // 0 = not revoked
  // Replaces the tenant's max class for this key (raise or lower); nullopt =
  // the tenant's.
  std::optional<WorkloadClass> max_class = std::nullopt;

  bool revoked() const { return revoked_at != 0; }
  bool expired(int64_t now_ms) const { return expires_at != 0 && now_ms >= expires_at; }
  // True when `model` is in the scope list (or the list is empty).
  bool AllowsModel(std::string_view model) const;
};

enum class LimitScope { kTenant, kKey };
const char* LimitScopeName(LimitScope scope);  // "tenant" | "key"
Result<LimitScope> ParseLimitScope(std::string_view name);

// Per-minute request and token limits and a concurrency cap; 0 = unlimited.
struct LimitSet {
  int64_t rpm = 0;
  int64_t tpm = 0;
  int64_t concurrent = 0;
};

// A LimitSet attached to a tenant or a key, for one model ("" = any model).
struct LimitRule {
  LimitScope scope = LimitScope::kTenant;
  std::string scope_id;  // tenant id or key id
  std::string model;     // "" = every model
  LimitSet limits;
};

// Provisioned throughput: tokens per second reserved for a tenant on a model.
struct Reservation {
  std::string tenant_id;
  std::string model;
  double tokens_per_second = 0;
};

// Prices in currency units per million tokens, and per replica-hour for
// dedicated deployments of the model.
struct Price {
  std::string model;
  double input_per_mtok = 0;
  double cached_input_per_mtok = 0;
  double output_per_mtok = 0;
  double replica_hour = 0;
  // Multiplies the token prices of batch-class usage (service_tier batch);
  // in (0, 1]. OpenAI's Batch API discount is 0.5. Replica-hours are not
  // discounted.
  double batch_factor = 1.0;
};

enum class UsageStatus {
  kOk,
  kError,         // the engine or an upstream failed
  kCancelled,     // the client went away
  kRateLimited,   // 429
  kUnauthorized,  // 401/403
  kBadRequest,    // 400
  kTimeout,       // deadline exceeded
  kUnavailable,   // 503: no replica, store down, overloaded
};
const char* UsageStatusName(UsageStatus status);  // "ok", "error", "cancelled", ...
Result<UsageStatus> ParseUsageStatus(std::string_view name);

// One request. Metadata only: never text, tool arguments or anything derived
// from them (see usage_ledger.h, the one code path that writes these).
struct UsageRecord {
  std::string request_id;  // unique per record in a store: a second record with the same id is ignored
  std::string tenant_id;
  std::string key_id;
  std::string model;       // the name the client asked for (alias or model)
  std::string deployment;  // the deployment that served it
  std::string version;     // the deployment's version (rollouts)
  int64_t prompt_tokens = 0;      // including cached_tokens
  int64_t cached_tokens = 0;      // prompt tokens served from the prefix cache
  int64_t completion_tokens = 0;
  int64_t queue_ms = 0;
  int64_t ttft_ms = 0;
  int64_t total_ms = 0;
  UsageStatus status = UsageStatus::kOk;
  int http_status = 200;
  int64_t started_at_ms = 0;
  // The class the request ran at (priced with Price::batch_factor when batch).
  WorkloadClass service_tier = WorkloadClass::kInteractive;
};

// Replica-hours a dedicated deployment ran for a tenant on one UTC day.
struct ReplicaHours {
  std::string tenant_id;
  std::string deployment;
  std::string model;
  int64_t day_ms = 0;  // start of the UTC day (multiple of kDayMs)
  double hours = 0;    // added to what the store already holds for that key
};

constexpr int64_t kDayMs = 86'400'000;
inline int64_t DayStart(int64_t ms) { return ms >= 0 ? ms / kDayMs * kDayMs : (ms - kDayMs + 1) / kDayMs * kDayMs; }

// Aggregation: group by any subset of tenant, key, model, day and service
// tier; filter by a time range [from_ms, to_ms) and optionally one tenant /
// key / model.
struct UsageQuery {
  bool by_tenant = true;
  bool by_key = false;
  bool by_model = false;
  bool by_day = false;
  bool by_tier = false;  // the workload class the requests ran at
  int64_t from_ms = 0;
  int64_t to_ms = INT64_MAX;
  std::string tenant_id;  // "" = all
  std::string key_id;     // "" = all
  std::string model;      // "" = all
};

// One aggregated row. Grouping fields not asked for are "" / 0. Cost is 0
// from the store; usage_report.h prices rows.
struct UsageRow {
  std::string tenant_id;
  std::string key_id;
  std::string model;
  int64_t day_ms = 0;
  int64_t requests = 0;
  int64_t errors = 0;  // status != ok
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t total_ms_sum = 0;
  int64_t ttft_ms_sum = 0;
  double replica_hours = 0;
  double cost = 0;
  std::string service_tier;  // "batch" | "interactive" | "realtime" when grouped by tier, else ""
};

// Validation, shared by every store and the admin API. Messages name the
// field, never echo a secret.
Status ValidateTenantId(std::string_view id);   // [a-z0-9_-]{1,64}
Status ValidateName(std::string_view what, std::string_view value);  // <= 256 bytes, no control bytes
Status ValidateTenant(const Tenant& t);
Status ValidateApiKey(const ApiKey& k);
Status ValidateLimitRule(const LimitRule& r);
Status ValidateReservation(const Reservation& r);
Status ValidatePrice(const Price& p);
Status ValidateUsageRecord(const UsageRecord& r);
// A stored class name ("batch" | "interactive" | "realtime"); OpenAI's
// service_tier aliases are for requests, not for records.
Result<WorkloadClass> ParseStoredClass(std::string_view name);

}  // namespace pagoda::tenancy
