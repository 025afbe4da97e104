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
#include "control/tenant_sla.h"
#include "http/message.h"
#include "tenancy/rate_limiter.h"
#include "tenancy/records.h"
#include "tenancy/signed_headers.h"
#include "tenancy/tenant_cache.h"
#include "tenancy/tenant_store.h"
#include "tenancy/usage_ledger.h"

namespace pagoda::control {

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

  tenancy::TenantContext Context() const;  // what replicas are told (signed headers)
};

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
};

class ControlPlane {
 public:
  static Result<std::unique_ptr<ControlPlane>> Open(const ControlPlaneOptions& options);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // The caller of `request` for `model` (the name as sent: alias, model or
  // "model@version"; "" skips the key's model scope, for /v1/models), or
  // the error response to send.
  std::variant<Caller, http::Response> Authenticate(const http::Request& request, std::string_view model);

  // Admits against every limit on (key, tenant) x (model, all models),
  // reserving prompt_tokens + (max_tokens, or default_max_tokens when 0).
  // A refusal (429/503) is recorded in the ledger under `request_id`.
  std::variant<Ticket, http::Response> Admit(const Caller& caller, std::string_view model, int64_t prompt_tokens,
                                             int64_t max_tokens, std::string_view request_id);

  // Settles the reservation with prompt + completion tokens, records usage
  // (one ledger record, metadata only) and the SLA sample. Once per ticket.
  void Finish(Ticket& ticket, const Caller& caller, const RequestOutcome& outcome);

  // Dedicated deployments are metered in replica-hours: called by every
  // gateway process as often as it likes, each (deployment, minute) is
  // counted once across all of them (a shared counter decides which), as
  // `replicas` replica-minutes.
  void MeterReplicaMinute(const std::string& tenant, const std::string& deployment, const std::string& model,
                          int replicas);

  // Signed tenant headers for a replica (empty without a signing secret).
  tenancy::HeaderList SignedHeaders(const Caller& caller, std::string_view request_id) const;

  tenancy::TenantStore& store() { return *store_; }
  tenancy::UsageLedger& ledger() { return *ledger_; }
  TenantSla& sla() { return sla_; }
  const ControlPlaneOptions& options() const { return options_; }

  // pagoda_control_* counters and the per-tenant SLA metrics (Prometheus text).
  std::string RenderMetrics() const;

 private:
  explicit ControlPlane(const ControlPlaneOptions& options);
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
