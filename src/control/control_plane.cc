#include "control/control_plane.h"

#include <algorithm>
#include <atomic>
#include <sstream>

#include "api/api_error.h"
#include "base/log.h"
#include "http/auth.h"
#include "tenancy/api_key.h"
#include "tenancy/counter_store.h"

namespace pagoda::control {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

http::Response ErrorOf(const api::ApiError& e) { return http::Response::Json(e.status, e.ToJsonString()); }

api::ApiError Error(int status, std::string message, std::string code, std::string type) {
  api::ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.code = std::move(code);
  e.type = std::move(type);
  return e;
}

api::ApiError StoreUnavailable(const Status& s) {
  // The message names the store and the operation, never a key.
  PAGODA_LOG(Error) << "control plane: store unavailable, refusing requests: " << s.message();
  return Error(503, "The control plane's store is unavailable; the request was not admitted.", "store_unavailable",
               "server_error");
}

// "model@version" -> "model".
std::string_view Unpinned(std::string_view model) {
  const size_t at = model.find('@');
  return at == std::string_view::npos ? model : model.substr(0, at);
}

std::string CounterKey(tenancy::LimitScope scope, const std::string& id, const std::string& model) {
  return std::string(scope == tenancy::LimitScope::kKey ? "k:" : "t:") + id + "|m:" + (model.empty() ? "*" : model);
}

}  // namespace

struct ControlPlane::Counters {
  std::atomic<int64_t> authenticated{0}, unauthenticated{0}, forbidden{0}, admitted{0}, rate_limited{0},
      unavailable{0};
};

WorkloadClass ResolveClass(const Caller& caller, std::optional<WorkloadClass> requested) {
  if (!requested) return std::min(caller.default_class, caller.max_class);
  return std::min(*requested, caller.max_class);
}

tenancy::TenantContext Caller::Context(WorkloadClass workload_class) const {
  tenancy::TenantContext c;
  c.tenant = tenant.id;
  c.key_id = key.id;
  c.plan = tenancy::PlanKindName(tenant.plan);
  c.weight = tenant.weight;
  c.priority = priority;
  c.cache_scope = cache_scope;
  c.workload_class = std::min(workload_class, max_class);
  return c;
}

std::optional<std::string_view> CredentialOf(const http::Request& request) {
  if (const std::string* a = request.headers.Find("Authorization")) return std::string_view(*a);
  if (const std::string* k = request.headers.Find("x-api-key")) return std::string_view(*k);
  return std::nullopt;
}

std::optional<http::Response> RefuseInsecureKey(const http::Request& request, bool allow_insecure_keys) {
  if (request.secure || allow_insecure_keys) return std::nullopt;
  return ErrorOf(Error(403,
                       "Keys are accepted only over TLS (https). Use the server's TLS port, or allow keys over "
                       "plain HTTP (--allow-insecure-keys, allow_insecure_keys) for loopback use.",
                       "insecure_transport", "invalid_request_error"));
}

std::optional<http::Response> RequireAdminKey(const http::Request& request, std::string_view admin_key,
                                              bool allow_insecure_keys, std::string_view how_to_enable) {
  if (admin_key.empty()) {
    return ErrorOf(Error(403, "The admin API is disabled: " + std::string(how_to_enable) + ".", "admin_disabled",
                         "invalid_request_error"));
  }
  if (auto refused = RefuseInsecureKey(request, allow_insecure_keys)) return refused;
  return http::RequireBearerToken(request, admin_key);
}

ControlPlane::ControlPlane(const ControlPlaneOptions& options)
    : options_(options), sla_(options.sla_window), counters_seen_(std::make_unique<Counters>()) {}

ControlPlane::~ControlPlane() {
  // The ledger writes what it holds before the store goes.
  ledger_.reset();
  limiter_.reset();
}

Result<std::unique_ptr<ControlPlane>> ControlPlane::Open(const ControlPlaneOptions& options) {
  if (options.store_url.empty()) return InvalidArgument("control plane: no store (--db) given");
  std::unique_ptr<ControlPlane> cp(new ControlPlane(options));
  PAGODA_ASSIGN_OR_RETURN(cp->store_, tenancy::OpenTenantStore(options.store_url));
  tenancy::CounterStoreOptions co;
  co.window_ms = options.counter_window_ms;
  PAGODA_ASSIGN_OR_RETURN(
      cp->counters_, tenancy::OpenCounterStore(options.counters_url.empty() ? options.store_url : options.counters_url, co));
  tenancy::TenantCacheOptions tco;
  tco.pepper = options.key_pepper;
  cp->cache_ = std::make_unique<tenancy::TenantCache>(*cp->store_, tco);
  cp->limiter_ = std::make_unique<tenancy::RateLimiter>(cp->counters_.get());
  cp->ledger_ = std::make_unique<tenancy::UsageLedger>(*cp->store_);
  // Never logged, persisted or shown (InternalToken).
  PAGODA_ASSIGN_OR_RETURN(cp->internal_token_, tenancy::RandomId("", 32));
  // Provisioned reservations show against throughput in the SLA figures,
  // as the store has them now: a change through the admin API (of this or
  // any process) bumps the generation and is read on the next snapshot.
  cp->sla_.SetReservationSource(
      [cache = cp->cache_.get()]() -> std::optional<std::vector<tenancy::Reservation>> {
        auto all = cache->Reservations();
        if (!all.ok()) return std::nullopt;  // keep the last known; /metrics still answers
        return std::move(all).value();
      });
  PAGODA_LOG(Info) << "control plane: store " << cp->store_->Describe() << ", counters " << cp->counters_->Describe();
  return cp;
}

std::variant<Caller, http::Response> ControlPlane::Authenticate(const http::Request& request, std::string_view model) {
  const auto credential = CredentialOf(request);
  if (!credential) {
    ++counters_seen_->unauthenticated;
    return ErrorOf(Error(401,
                         "You didn't provide an API key. Provide it in the Authorization header "
                         "(Authorization: Bearer YOUR_KEY).",
                         "missing_api_key", "invalid_request_error"));
  }
  // The internal principal: compared in constant time, before the TLS rule
  // (the token never crosses the network).
  if (auto bearer = tenancy::ParseBearer(*credential);
      bearer.ok() && tenancy::HashesEqual(*bearer, internal_token_)) {
    return AuthenticateInternal(request, model);
  }
  if (auto refused = RefuseInsecureKey(request, options_.allow_insecure_keys)) {
    ++counters_seen_->forbidden;
    return std::move(*refused);
  }
  auto auth = cache_->Authenticate(*credential, NowMs());
  if (!auth.ok()) return AuthFailure(auth.status());
  return Authorized(std::move(*auth), model);
}

http::Response ControlPlane::AuthFailure(const Status& st) {
  const StatusCode c = st.code();
  if (c == StatusCode::kInvalidArgument || c == StatusCode::kNotFound) {
    ++counters_seen_->unauthenticated;
    return ErrorOf(api::InvalidApiKey());
  }
  ++counters_seen_->unavailable;
  return ErrorOf(StoreUnavailable(st));
}

std::variant<Caller, http::Response> ControlPlane::AuthenticateInternal(const http::Request& request,
                                                                        std::string_view model) {
  const std::string* key_id = request.headers.Find(kOnBehalfOfHeader);
  if (key_id == nullptr || key_id->empty()) {
    ++counters_seen_->unauthenticated;
    return ErrorOf(Error(401, std::string("An internal request must name its key in ") + kOnBehalfOfHeader + ".",
                         "invalid_api_key", "invalid_request_error"));
  }
  auto auth = cache_->AuthenticateKeyId(*key_id, NowMs());
  if (!auth.ok()) return AuthFailure(auth.status());
  auto who = Authorized(std::move(*auth), model);
  if (auto* c = std::get_if<Caller>(&who)) c->metered_by_caller = true;
  return who;
}

std::variant<Caller, http::Response> ControlPlane::Authorized(tenancy::AuthContext auth, std::string_view model) {
  if (!model.empty() && !auth.key.AllowsModel(model) && !auth.key.AllowsModel(Unpinned(model))) {
    ++counters_seen_->forbidden;
    return ErrorOf(Error(403, "This API key is not allowed to use the model '" + std::string(Unpinned(model)) + "'.",
                         "model_not_allowed", "invalid_request_error"));
  }
  ++counters_seen_->authenticated;
  Caller c;
  c.tenant = std::move(auth.tenant);
  c.key = std::move(auth.key);
  c.cache_scope = c.tenant.share_cache_across_keys ? "t:" + c.tenant.id : "t:" + c.tenant.id + "/k:" + c.key.id;
  // Classes: the key's max, else the tenant's, else the plan's; the
  // tenant's default, never above that max.
  c.max_class = c.key.max_class.value_or(c.tenant.max_class.value_or(tenancy::PlanMaxClass(c.tenant.plan)));
  c.default_class = std::min(c.tenant.default_class, c.max_class);
  // Provisioned: ahead of shared traffic up to the reservation on this
  // model; past it the tenant competes like everyone else.
  if (c.tenant.plan == tenancy::PlanKind::kProvisioned) {
    auto r = cache_->ReservationFor(c.tenant.id, Unpinned(model));
    if (r.ok() && r->has_value() &&
        sla_.TokensPerSecond(c.tenant.id, std::string(Unpinned(model))) < (*r)->tokens_per_second) {
      c.priority = 1;
    }
  }
  return c;
}

WorkloadClass ControlPlane::ResolveClass(const Caller& caller, std::optional<WorkloadClass> requested) const {
  return control::ResolveClass(caller, requested);
}

http::Response ControlPlane::Refused(http::Response response, const Caller& caller, std::string_view model,
                                     std::string_view request_id) {
  RequestOutcome o;
  o.request_id = std::string(request_id);
  o.model = std::string(model);
  o.status = response.status == 429 ? tenancy::UsageStatus::kRateLimited : tenancy::UsageStatus::kUnavailable;
  o.http_status = response.status;
  if (!caller.metered_by_caller) RecordUsage(caller, o);  // the batch service records its own lines
  return response;
}

std::variant<Ticket, http::Response> ControlPlane::Admit(const Caller& caller, std::string_view model,
                                                         int64_t prompt_tokens, int64_t max_tokens,
                                                         std::string_view request_id) {
  if (Status s = ledger_->AdmissionStatus(); !s.ok()) {
    ++counters_seen_->unavailable;
    return Refused(ErrorOf(StoreUnavailable(s)), caller, model, request_id);
  }
  tenancy::AuthContext auth{caller.key, caller.tenant};
  auto rules = cache_->LimitsFor(auth, Unpinned(model));
  if (!rules.ok()) {
    ++counters_seen_->unavailable;
    return Refused(ErrorOf(StoreUnavailable(rules.status())), caller, model, request_id);
  }
  Ticket t;
  t.reserved_tokens = std::max<int64_t>(prompt_tokens, 0) + (max_tokens > 0 ? max_tokens : options_.default_max_tokens);
  tenancy::AdmitRequest req;
  req.reserve_tokens = t.reserved_tokens;
  for (const tenancy::LimitRule& r : *rules) {
    tenancy::ScopeLimits s;
    s.key = CounterKey(r.scope, r.scope_id, r.model);
    s.label = std::string(tenancy::LimitScopeName(r.scope)) + " " + r.scope_id +
              (r.model.empty() ? std::string(" on all models") : " on model " + r.model);
    if (r.limits.rpm > 0) s.requests = r.limits.rpm;
    if (r.limits.tpm > 0) s.tokens = r.limits.tpm;
    if (r.limits.concurrent > 0) s.concurrent = r.limits.concurrent;
    if (s.requests || s.tokens || s.concurrent) req.scopes.push_back(std::move(s));
  }
  if (req.scopes.empty()) {
    ++counters_seen_->admitted;
    return t;
  }
  auto d = limiter_->Admit(req);
  if (!d.ok()) {
    ++counters_seen_->unavailable;
    return Refused(ErrorOf(StoreUnavailable(d.status())), caller, model, request_id);
  }
  if (!d->admitted()) {
    ++counters_seen_->rate_limited;
    http::Response r = http::Response::Json(429, d->refused->ErrorBody());
    for (const auto& h : d->headers) r.headers.Set(h.name, h.value);
    return Refused(std::move(r), caller, model, request_id);
  }
  ++counters_seen_->admitted;
  t.admission = std::move(d->admission);
  t.headers = std::move(d->headers);
  return t;
}

void ControlPlane::Finish(Ticket& ticket, const Caller& caller, const RequestOutcome& o) {
  if (ticket.admission && !ticket.admission->settled()) {
    Status s = ticket.admission->Settle(o.prompt_tokens + o.completion_tokens);
    if (!s.ok()) PAGODA_LOG(Warning) << "control plane: settlement queued until the counters return: " << s.message();
  }
  if (!caller.metered_by_caller) RecordUsage(caller, o);  // the batch service records its own lines
  RequestTiming timing;
  timing.tenant = caller.tenant.id;
  timing.model = std::string(Unpinned(o.model));
  timing.ok = o.status == tenancy::UsageStatus::kOk || o.status == tenancy::UsageStatus::kCancelled;
  timing.ttft_seconds = o.ttft_seconds;
  timing.mean_itl_seconds = o.mean_itl_seconds;
  timing.completion_tokens = o.completion_tokens;
  sla_.Record(timing);
}

void ControlPlane::RecordUsage(const Caller& caller, const RequestOutcome& o) {
  tenancy::UsageRecord r;
  r.request_id = o.request_id;
  r.tenant_id = caller.tenant.id;
  r.key_id = caller.key.id;
  r.model = o.model;
  r.deployment = o.deployment;
  r.version = o.version;
  r.prompt_tokens = o.prompt_tokens;
  r.cached_tokens = o.cached_tokens;
  r.completion_tokens = o.completion_tokens;
  auto ms = [](double s) { return s < 0 ? int64_t{0} : static_cast<int64_t>(s * 1000.0 + 0.5); };
  r.queue_ms = ms(o.queue_seconds);
  r.ttft_ms = ms(o.ttft_seconds);
  r.total_ms = ms(o.total_seconds);
  r.status = o.status;
  r.http_status = o.http_status;
  r.started_at_ms = NowMs() - r.total_ms;
  r.service_tier = o.service_tier;
  PAGODA_LOG(Debug) << tenancy::MetadataLogLine(r);
  ledger_->Record(std::move(r));
}

void ControlPlane::MeterReplicaMinute(const std::string& tenant, const std::string& deployment,
                                      const std::string& model, int replicas) {
  if (replicas <= 0) return;
  const int64_t now = NowMs();
  tenancy::CounterRule once{"rh:" + deployment, tenancy::CounterKind::kRequests, 1, 1};
  auto a = counters_->Acquire({once}, now, "");
  if (!a.ok()) {
    PAGODA_LOG(Warning) << "control plane: replica-hours not metered this minute: " << a.status().message();
    return;
  }
  if (!a->admitted) return;  // another gateway metered this minute
  tenancy::ReplicaHours h;
  h.tenant_id = tenant;
  h.deployment = deployment;
  h.model = model;
  h.day_ms = tenancy::DayStart(now);
  h.hours = replicas / 60.0 * (static_cast<double>(options_.counter_window_ms) / 60'000.0);
  if (Status s = store_->AddReplicaHours(h); !s.ok()) {
    PAGODA_LOG(Warning) << "control plane: replica-hours not stored: " << s.message();
  }
}

tenancy::HeaderList ControlPlane::SignedHeaders(const Caller& caller, std::string_view request_id,
                                                WorkloadClass workload_class) const {
  if (options_.signing_secret.empty()) return {};
  auto h = tenancy::SignTenantHeaders(caller.Context(workload_class), request_id, options_.signing_secret,
                                      std::chrono::system_clock::now());
  if (!h.ok()) {
    PAGODA_LOG(Warning) << "control plane: tenant headers not signed: " << h.status().message();
    return {};
  }
  return std::move(h).value();
}

std::string ControlPlane::RenderMetrics() const {
  std::ostringstream o;
  auto counter = [&](const char* name, const char* help, const std::atomic<int64_t>& v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " counter\n" << name << " " << v.load() << "\n";
  };
  const Counters& c = *counters_seen_;
  counter("pagoda_control_authenticated_total", "Requests whose API key was accepted.", c.authenticated);
  counter("pagoda_control_unauthenticated_total", "Requests refused with 401 (no, bad, revoked or expired key).",
          c.unauthenticated);
  counter("pagoda_control_forbidden_total", "Requests refused with 403 (scope, plain HTTP).", c.forbidden);
  counter("pagoda_control_admitted_total", "Requests admitted against their limits.", c.admitted);
  counter("pagoda_control_rate_limited_total", "Requests refused with 429.", c.rate_limited);
  counter("pagoda_control_unavailable_total", "Requests refused with 503 because a store failed (fail closed).",
          c.unavailable);
  const tenancy::UsageLedgerStats ls = ledger_->stats();
  o << "# HELP pagoda_usage_ledger_records Usage ledger records by state.\n# TYPE pagoda_usage_ledger_records gauge\n"
    << "pagoda_usage_ledger_records{state=\"written\"} " << ls.written << "\n"
    << "pagoda_usage_ledger_records{state=\"pending\"} " << ls.pending << "\n"
    << "pagoda_usage_ledger_records{state=\"dropped\"} " << ls.dropped << "\n"
    << "# HELP pagoda_usage_ledger_failures_total Failed ledger batch attempts (each retried).\n"
    << "# TYPE pagoda_usage_ledger_failures_total counter\npagoda_usage_ledger_failures_total " << ls.failures << "\n";
  o << "# HELP pagoda_rate_limit_pending_settlements Settlements queued while the counters are unreachable.\n"
    << "# TYPE pagoda_rate_limit_pending_settlements gauge\npagoda_rate_limit_pending_settlements "
    << limiter_->pending() << "\n";
  o << sla_.RenderPrometheus();
  return o.str();
}

}  // namespace pagoda::control
