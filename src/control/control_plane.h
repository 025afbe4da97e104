// ControlPlane: the per-request control path that `pagoda gateway` and
// `pagoda serve` share (one library, not two copies): authenticate the
// caller's API key, admit the request against its key's and tenant's limits
// (shared counters, so a limit holds across every gateway process), then
// meter it when it ends, however it ends: settle the token reservation with
// the real count, write one metadata-only usage record (tenancy/usage_ledger.h,
// the audited path) and feed the tenant's SLA figures.
//
// Everything here works on ids, counts and times. Request bodies never
// enter: the caller passes the model name, the token counts and the timings.
//
// Errors reach the client as OpenAI-style error objects: 401 (no key, bad,
// revoked or expired key), 403 (key not scoped to the model, key sent over
// plain HTTP without allow_insecure_keys), 429 (a limit; with Retry-After and
// the x-ratelimit-* headers), 503 (the store cannot be reached: fail closed,
// never admitted unmetered).
//
// Workload classes (base/workload_class.h): each caller may use classes up
// to its max_class (the key's, else its tenant's, else its plan's:
// serverless -> interactive, provisioned and dedicated -> realtime) and
// defaults to its tenant's default_class (clamped to that max). A request
// asking for more than its max runs at the max: it is downgraded, never
// refused, like OpenAI's service_tier (ResolveClass). docs/CONTROL_PLANE.md,
// "Workload classes".
//
// The internal principal: the Batch API (src/batch) runs each batch line
// in-process through the server's own router as the key that created the
// batch. It sends InternalToken() as its credential and names the key in
// x-pagoda-on-behalf-of; Authenticate then checks that key exactly as if its
// secret had been sent (revoked, expired, disabled tenant, model scope) and
// marks the caller metered_by_caller: the batch service writes the line's
// usage record itself, in the same transaction as the line's result, so a
// line restarted after a crash is never counted twice. For such a caller
// Admit writes no refusal record and Finish writes no ledger record (it still
// settles the rate-limit counters and feeds the SLA figures).
//
// Thread safety: every method from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "base/workload_class.h"
#include "control/tenant_sla.h"
#include "http/message.h"
#include "tenancy/rate_limiter.h"
#include "tenancy/records.h"
#include "tenancy/signed_headers.h"
#include "tenancy/tenant_cache.h"
#include "tenancy/tenant_store.h"
#include "tenancy/usage_ledger.h"

namespace pagoda::control {

// With the internal token as credential: the public id of the key the
// request runs as (ControlPlane::InternalToken).
inline constexpr const char* kOnBehalfOfHeader = "x-pagoda-on-behalf-of";
// A request's workload class, beside its body's service_tier (wins over it).
inline constexpr const char* kServiceTierHeader = "x-pagoda-service-tier";

struct ControlPlaneOptions {
  // Tenants, keys, limits, prices and the usage ledger: "sqlite:///path.db"
  // (or a plain path; the default store) or "postgresql://...".
  std::string store_url;
  // Rate-limit counters: "" = the store's own database; "redis://host:port".
  std::string counters_url;
  std::string key_pepper;      // HMAC pepper for key hashes ("" = plain SHA-256); from the environment
  std::string signing_secret;  // shared with replicas for signed tenant headers; "" = none
  // API keys (and admin keys) are refused on plain-HTTP connections unless
  // this is set (loopback use, or TLS terminated in front).
  bool allow_insecure_keys = false;
  // Tokens reserved for the completion when a request names no max_tokens.
  int64_t default_max_tokens = 4096;
  int64_t counter_window_ms = 60'000;
  std::chrono::seconds sla_window{300};
};

// An authenticated caller: ids and plan, nothing secret.
struct Caller {
  tenancy::Tenant tenant;
  tenancy::ApiKey key;     // its hash stays here, never in a response or log
  std::string cache_scope;  // the prefix-cache salt: per key, or per tenant when it shares across keys
  // 1 for a provisioned tenant below its reservation on the model (over
  // the last minute), else 0.
  int32_t priority = 0;
  // The most urgent class the caller may use, and the class of a request
  // that names none (<= max_class). See ResolveClass.
  WorkloadClass max_class = WorkloadClass::kInteractive;
  WorkloadClass default_class = WorkloadClass::kInteractive;
  // True for the internal principal (batch lines): the caller writes the
  // usage record itself; Admit and Finish write none.
  bool metered_by_caller = false;

  // What replicas are told (signed headers), for a request of class
  // `workload_class` (clamped to max_class); without it, default_class.
  tenancy::TenantContext Context(WorkloadClass workload_class) const;
  tenancy::TenantContext Context() const { return Context(default_class); }
};

// The class a request of `caller` runs at: `requested` clamped to
// caller.max_class (a request above its max is downgraded to the max, not
// refused); absent (or "auto") -> caller.default_class.
WorkloadClass ResolveClass(const Caller& caller, std::optional<WorkloadClass> requested);

// An admitted request: settle it through ControlPlane::Finish.
struct Ticket {
  std::optional<tenancy::Admission> admission;  // empty when no limit applies
  std::vector<tenancy::HttpHeader> headers;     // x-ratelimit-* for the response
  int64_t reserved_tokens = 0;
  std::chrono::steady_clock::time_point admitted_at = std::chrono::steady_clock::now();
};

// How a request ended: metadata only.
struct RequestOutcome {
  std::string request_id;
  std::string model;       // as the client named it
  std::string deployment;  // what served it ("" before routing)
  std::string version;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t completion_tokens = 0;
  double queue_seconds = 0;
  double ttft_seconds = -1;      // < 0: no token came
  double mean_itl_seconds = -1;  // < 0: fewer than two tokens
  double total_seconds = 0;
  tenancy::UsageStatus status = tenancy::UsageStatus::kOk;
  int http_status = 200;
  WorkloadClass service_tier = WorkloadClass::kInteractive;  // the class it ran at (ResolveClass)
};

class ControlPlane {
 public:
  static Result<std::unique_ptr<ControlPlane>> Open(const ControlPlaneOptions& options);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // The caller of `request` for `model` (the name as sent: alias, model or
  // "model@version"; "" skips the key's model scope, for /v1/models), or
  // the error response to send. The internal token as credential (see the
  // top of this file) authenticates as the key named in x-pagoda-on-behalf-of
  // (401 when it is missing or unknown), over plain HTTP too: the token never
  // crosses the network.
  std::variant<Caller, http::Response> Authenticate(const http::Request& request, std::string_view model);

  // ResolveClass(caller, requested).
  WorkloadClass ResolveClass(const Caller& caller, std::optional<WorkloadClass> requested) const;

  // The internal principal's credential: 32 random bytes (OpenSSL RAND_bytes)
  // as 64 hex digits, made at Open, held only in memory: never logged,
  // persisted or shown. For in-process callers only (the Batch API).
  const std::string& InternalToken() const { return internal_token_; }

  // Admits against every limit on (key, tenant) x (model, all models),
  // reserving prompt_tokens + (max_tokens, or default_max_tokens when 0).
  // A refusal (429/503) is recorded in the ledger under `request_id`, unless
  // caller.metered_by_caller.
  std::variant<Ticket, http::Response> Admit(const Caller& caller, std::string_view model, int64_t prompt_tokens,
                                             int64_t max_tokens, std::string_view request_id);

  // Settles the reservation with prompt + completion tokens, records usage
  // (one ledger record, metadata only; none when caller.metered_by_caller)
  // and the SLA sample. Once per ticket.
  void Finish(Ticket& ticket, const Caller& caller, const RequestOutcome& outcome);

  // Dedicated deployments are metered in replica-hours: called by every
  // gateway process as often as it likes, each (deployment, minute) is
  // counted once across all of them (a shared counter decides which), as
  // `replicas` replica-minutes.
  void MeterReplicaMinute(const std::string& tenant, const std::string& deployment, const std::string& model,
                          int replicas);

  // Signed tenant headers for a replica (empty without a signing secret),
  // carrying `workload_class` (clamped to the caller's max_class).
  tenancy::HeaderList SignedHeaders(const Caller& caller, std::string_view request_id,
                                    WorkloadClass workload_class = WorkloadClass::kInteractive) const;

  tenancy::TenantStore& store() { return *store_; }
  tenancy::UsageLedger& ledger() { return *ledger_; }
  TenantSla& sla() { return sla_; }
  const ControlPlaneOptions& options() const { return options_; }

  // pagoda_control_* counters and the per-tenant SLA metrics (Prometheus text).
  std::string RenderMetrics() const;

 private:
  explicit ControlPlane(const ControlPlaneOptions& options);
  // The internal principal's path of Authenticate.
  // 401 for a key that is unknown or malformed, 503 when the store cannot say.
  http::Response AuthFailure(const Status& st);
  std::variant<Caller, http::Response> AuthenticateInternal(const http::Request& request, std::string_view model);
  // Scope check and the Caller for an authenticated key (both paths).
  std::variant<Caller, http::Response> Authorized(tenancy::AuthContext auth, std::string_view model);
  // One ledger record (metadata only): Finish, and Admit's refusals.
  void RecordUsage(const Caller& caller, const RequestOutcome& outcome);
  http::Response Refused(http::Response response, const Caller& caller, std::string_view model,
                         std::string_view request_id);
  struct Counters;

  ControlPlaneOptions options_;
  std::unique_ptr<tenancy::TenantStore> store_;
  std::unique_ptr<tenancy::CounterStore> counters_;
  std::unique_ptr<tenancy::TenantCache> cache_;
  std::unique_ptr<tenancy::RateLimiter> limiter_;
  std::unique_ptr<tenancy::UsageLedger> ledger_;
  TenantSla sla_;
  std::unique_ptr<Counters> counters_seen_;
  std::string internal_token_;
};

// "Bearer <key>" from Authorization, else the x-api-key header; nullopt when neither.
std::optional<std::string_view> CredentialOf(const http::Request& request);

// 403 insecure_transport for a key (API or admin) sent over plain HTTP,
// unless `allow_insecure_keys`; nullopt when the request may go on.
std::optional<http::Response> RefuseInsecureKey(const http::Request& request, bool allow_insecure_keys);

// The admin API's guard: the admin key over TLS (or allow_insecure_keys),
// compared in constant time. An empty key disables the admin API (403).
std::optional<http::Response> RequireAdminKey(const http::Request& request, std::string_view admin_key,
                                              bool allow_insecure_keys, std::string_view how_to_enable);

}  // namespace pagoda::control
