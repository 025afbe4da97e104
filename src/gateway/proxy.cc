#include "gateway/proxy.h"

#include <mutex>
#include <optional>
#include <vector>

#include "api/api_error.h"
#include "base/log.h"
#include "tenancy/signed_headers.h"
#include "gateway/pd_router.h"
#include "gateway/prefill_leg.h"
#include "gateway/request_info.h"
#include "gateway/request_meter.h"
#include "gateway/tenant_routing.h"
#include "gateway/router.h"
#include "gateway/sse_splitter.h"
#include "gateway/usage_reader.h"

namespace pagoda::gateway {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxBufferedBody = size_t{64} << 20;
// Bytes of a stream waiting for a slow client before the upstream read pauses.
constexpr size_t kMaxQueuedForClient = size_t{1} << 20;

http::Response ErrorOf(const api::ApiError& e) { return http::Response::Json(e.status, e.ToJsonString()); }

api::ApiError UpstreamFailure(int status, const std::string& message, const char* code) {
  api::ApiError e;
  e.status = status;
  e.type = "server_error";
  e.message = message;
  e.code = code;
  return e;
}

std::string StatusClass(int status) { return std::to_string(status / 100) + "xx"; }

bool IsHopByHop(std::string_view name) {
  static const char* kHop[] = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                               "trailer",    "trailers",   "transfer-encoding",  "upgrade",             "host",
                               "content-length"};
  for (const char* h : kHop) {
    if (http::EqualsIgnoreCase(name, h)) return true;
  }
  return false;
}

bool IsTenantHeader(std::string_view name) {
  using namespace tenancy;
  for (const char* h : {kHeaderTenant, kHeaderKeyId, kHeaderPlan, kHeaderWeight, kHeaderPriority, kHeaderCacheScope,
                        kHeaderClass, kHeaderTimestamp, kHeaderSignature, control::kOnBehalfOfHeader}) {
    if (http::EqualsIgnoreCase(name, h)) return true;
  }
  return false;
}

// The usage status of a response the client got.
tenancy::UsageStatus UsageStatusOf(int http_status) {
  using tenancy::UsageStatus;
  if (http_status / 100 == 2) return UsageStatus::kOk;
  if (http_status == 401 || http_status == 403) return UsageStatus::kUnauthorized;
  if (http_status == 429) return UsageStatus::kRateLimited;
  if (http_status == 503) return UsageStatus::kUnavailable;
  if (http_status == 504) return UsageStatus::kTimeout;
  if (http_status / 100 == 4) return UsageStatus::kBadRequest;
  return UsageStatus::kError;
}

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(const ProxyContext& ctx, std::shared_ptr<const RoutingTable> table, const http::Request& req,
           std::shared_ptr<http::ResponseWriter> writer)
      : ctx_(ctx),
        table_(std::move(table)),
        req_(req),
        writer_(std::move(writer)),
        received_(Clock::now()),
        meter_(ctx.control, received_) {}

  void Start();

 private:
  // Routes and starts an upstream call. On a routing failure: false, and the
  // client is answered unless `retry` (the caller then reports the first failure).
  bool Dispatch(bool retry = false);
  // Starts the call to decision_'s replica; the gateway's own time since `since` counts as added latency.
  void SendToReplica(Clock::time_point since);
  // P/D: starts a prefill leg when the request is to be disaggregated (the
  // call to decision_'s replica follows its report); false: colocated.
  bool StartPrefillLeg();
  void OnPrefillDone(const PrefillLegReport& report);
  void OnHead(const http::UpstreamResponseHead& head);
  void OnBody(std::string_view bytes);
  void OnDone(const http::UpstreamOutcome& outcome);
  void OnClientGone();
  void Fail(const api::ApiError& e);  // before anything reached the client
  void EndStreamWithError(const std::string& message);
  void Finish(const std::string& status_class);
  http::Headers ServedBy() const;
  void Tokenize(const ModelRoute& model);
  // The request to `r` with `body`: endpoint and API root, the headers a
  // proxied request forwards (signed tenant headers), timeouts, deadline.
  http::UpstreamRequest UpstreamFor(const Replica& r, std::string body) const;
  // The client's body as `r` gets it (served model name, forced usage).
  std::string UpstreamBody(const Replica& r) const;

  const ProxyContext ctx_;
  std::shared_ptr<const RoutingTable> table_;
  const http::Request req_;
  std::shared_ptr<http::ResponseWriter> writer_;
  const Clock::time_point received_;
  Clock::time_point deadline_ = Clock::time_point::max();
  RequestInfo info_;
  std::vector<int32_t> tokens_;  // the prompt as the engine will see it; empty when untokenized
  RouteRequest route_;
  std::string session_key_, zone_;
  RouteDecision decision_;
  LoadGuard guard_;
  std::string prefill_replica_;  // the replica that prefilled this attempt's prompt (disaggregated); "" when none
  int attempts_ = 0;
  double added_seconds_ = 0;
  RequestMeter meter_;  // keys, limits, usage (no-op without a control plane)
  std::string routed_model_;  // route_.model's storage when the tenant's plan picks it

  // Per attempt (callbacks of one call run one at a time; a retry starts
  // from the previous call's on_done).
  enum class Mode { kWaiting, kSse, kBuffer, kRetrying } mode_ = Mode::kWaiting;
  int status_ = 0;
  http::Headers head_headers_;
  std::string body_;
  SseSplitter sse_;
  std::string relay_;  // the events of one upstream read, framed for the client (kept for its capacity)
  std::optional<ReportedUsage> usage_;  // the replica's usage (body, or the stream's usage chunk)
  bool client_started_ = false;  // bytes went to the client: no retry
  bool verdict_failure_ = false;

  std::mutex mu_;  // guards call_, prefill_, client_gone_ (the server's cancel callback runs on its threads)
  std::shared_ptr<http::UpstreamCall> call_;
  std::shared_ptr<PrefillLeg> prefill_;  // while the prefill leg runs
  bool client_gone_ = false;
  bool cancel_requested_ = false;  // a callback cancelled before call_ was set

  // Cancels the current attempt's upstream call (now, or as soon as Start returns it).
  void CancelCall() {
    std::lock_guard<std::mutex> lock(mu_);
    if (call_) {
      call_->Cancel();
    } else {
      cancel_requested_ = true;
    }
  }
};

void Exchange::Start() {
  const bool is_models = req_.method == "GET";
  auto parsed = ParseRequestInfo(req_.body.empty() && is_models ? std::string_view("{}") : req_.body,
                                 /*model_required=*/!is_models);
  if (!parsed.ok()) return Fail(parsed.error());
  info_ = std::move(parsed).value();
  if (info_.model.empty()) {
    // A GET without a model (generic endpoints): the first model.
    info_.model = table_->config().models.front().name;
  }
  const GatewayConfig& c = table_->config();
  int64_t deadline_ms = c.request_deadline_ms;
  if (const std::string* h = req_.headers.Find(c.deadline_header)) {
    try {
      const int64_t v = std::stoll(*h);
      if (v > 0) deadline_ms = std::min(deadline_ms, v);
    } catch (const std::exception&) {
      return Fail(api::InvalidValue(c.deadline_header, "must be a positive integer of milliseconds"));
    }
  }
  deadline_ = received_ + std::chrono::milliseconds(deadline_ms);
  const std::string* zone = req_.headers.Find(c.zone_header);
  zone_ = zone != nullptr ? *zone : c.zone;
  const AliasConfig* alias = table_->FindAlias(info_.model);
  const ModelRoute* model = table_->FindModel(alias != nullptr ? std::string_view(alias->model)
                                                               : SplitPinned(info_.model).first);
  if (model != nullptr) {
    if (const std::string* s = req_.headers.Find(model->config.session_header)) session_key_ = *s;
  }
  if (session_key_.empty()) session_key_ = info_.user;
  route_.model = info_.model;
  route_.zone = zone_;
  route_.session_key = session_key_;
  route_.prompt_text = info_.prompt_text;
  route_.prompt_tokens = info_.prompt_tokens;
  if (model != nullptr) Tokenize(*model);
  route_.max_tokens = info_.max_tokens;
  if (auto refused = meter_.Admit(req_, info_, route_.prompt_tokens)) {
    writer_->Respond(std::move(*refused));
    return;
  }
  if (const control::Caller* caller = meter_.caller()) {
    auto routed = TenantRoute(*table_, info_.model, *caller);
    if (!routed.ok()) return Fail(routed.error());
    routed_model_ = std::move(routed).value();
    route_.model = routed_model_;
  }
  route_.cache_scope_digest = meter_.cache_scope_digest();
  // The class: the caller's key decides what it may ask for (clamped, its
  // default when it asks nothing); without a control plane, what it asks.
  const control::Caller* caller = meter_.caller();
  route_.workload_class = caller != nullptr ? control::ResolveClass(*caller, RequestedClass(info_, req_))
                                            : RequestClass(info_, req_);
  meter_.set_workload_class(route_.workload_class);
  writer_->OnCancel([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->OnClientGone();
  });
  Dispatch();
}

void Exchange::Tokenize(const ModelRoute& model) {
  if (!model.tokenizer || req_.method != "POST") return;
  const std::string_view path = std::string_view(req_.target).substr(0, req_.target.find('?'));
  auto tokens = model.tokenizer->Tokens(path, req_.body);
  if (!tokens.ok()) return;  // routed on the prompt text; the replica will say what is wrong
  tokens_ = std::move(tokens).value();
  route_.tokens = tokens_;
  route_.prompt_tokens = static_cast<int64_t>(tokens_.size());
}

bool Exchange::Dispatch(bool retry) {
  auto routed = Route(*table_, route_, Clock::now());
  if (!routed.ok()) {
    if (retry) return false;
    ctx_.metrics->RecordRouteError(routed.error().status);
    Fail(routed.error());
    return false;
  }
  decision_ = std::move(routed).value();
  if (decision_.pool_fallback) ctx_.metrics->RecordPoolFallback(decision_.replica->model(), route_.workload_class);
  if (!decision_.replica->state().OnSend(Clock::now())) {
    // The circuit closed on it between the filter and now: try once more.
    route_.exclude.insert(decision_.replica->id());
    return Dispatch(retry);
  }
  guard_ = LoadGuard(decision_.replica->shared_state(), decision_.blocks);
  ++attempts_;
  prefill_replica_.clear();  // a retry is colocated
  if (!retry && StartPrefillLeg()) {
    added_seconds_ += std::chrono::duration<double>(Clock::now() - received_).count();
    return true;
  }
  SendToReplica(received_);
  return true;
}

void Exchange::SendToReplica(Clock::time_point since) {
  mode_ = Mode::kWaiting;
  status_ = 0;
  body_.clear();
  usage_.reset();
  head_headers_ = {};
  sse_ = SseSplitter();
  verdict_failure_ = false;
  http::UpstreamRequest up = UpstreamFor(*decision_.replica, UpstreamBody(*decision_.replica));
  added_seconds_ += std::chrono::duration<double>(Clock::now() - since).count();
  auto self = shared_from_this();
  http::UpstreamEvents ev;
  ev.on_head = [self](const http::UpstreamResponseHead& h) { self->OnHead(h); };
  ev.on_body = [self](std::string_view b) { self->OnBody(b); };
  ev.on_done = [self](const http::UpstreamOutcome& o) { self->OnDone(o); };
  // A slow client: stop reading upstream once this much waits for it.
  ev.paused = [self] { return self->writer_->queued_bytes() > kMaxQueuedForClient; };
  {
    // This attempt's callbacks may run before Start returns: until call_
    // holds the new call, a cancel is recorded and applied below.
    std::lock_guard<std::mutex> lock(mu_);
    call_.reset();
    cancel_requested_ = false;
  }
  auto call = ctx_.client->Start(std::move(up), std::move(ev));
  std::lock_guard<std::mutex> lock(mu_);
  call_ = call;
  if (client_gone_ || cancel_requested_) call_->Cancel();
}

bool Exchange::StartPrefillLeg() {
  const Replica& decode = *decision_.replica;
  const std::string_view path = std::string_view(req_.target).substr(0, req_.target.find('?'));
  if (decode.external() || req_.method != "POST" || (path != "/v1/chat/completions" && path != "/v1/completions")) {
    return false;
  }
  const ModelRoute* model = table_->FindModel(decode.model());
  const Deployment* dep = model != nullptr ? model->FindDeployment(decode.version()) : nullptr;
  if (dep == nullptr) return false;
  const int64_t uncached =
      UncachedPromptTokens(!tokens_.empty(), tokens_.size(), req_.body.size(), decision_.predicted_cached_tokens);
  switch (DecidePd(*dep, decode, uncached, model->config.pd_threshold_tokens)) {
    case PdDecision::kNotApplicable:
      return false;
    case PdDecision::kColocatedBelowThreshold:
      ctx_.metrics->RecordPd(decode.model(), PdOutcome::kColocatedBelowThreshold);
      return false;
    case PdDecision::kColocatedNoKvTransfer:
      ctx_.metrics->RecordPd(decode.model(), PdOutcome::kColocatedNoKvTransfer);
      return false;
    case PdDecision::kDisaggregate:
      break;
  }
  PrefillLegPlan plan;
  plan.table = table_;
  plan.deployment = dep;
  plan.decode = decision_.replica;
  plan.client_body = req_.body;
  plan.served_model = model->config.served_model_name;
  plan.workload_class = route_.workload_class;
  plan.blocks = EstimateBlocks(route_.prompt_tokens, 1, model->config.block_size);
  plan.timeout = std::chrono::milliseconds(model->config.pd_prefill_timeout_ms);
  plan.deadline = deadline_;
  // `this` outlives every call of request_for: the leg calls it only before
  // it reports, and until then its `done` holds this exchange.
  auto leg = std::make_shared<PrefillLeg>(ctx_.client, ctx_.metrics, std::move(plan),
                                          [this](const Replica& r, std::string body) {
                                            return UpstreamFor(r, std::move(body));
                                          });
  {
    std::lock_guard<std::mutex> lock(mu_);
    prefill_ = leg;
    if (client_gone_) leg->Cancel();
  }
  leg->Start([self = shared_from_this()](const PrefillLegReport& r) { self->OnPrefillDone(r); });
  return true;
}

void Exchange::OnPrefillDone(const PrefillLegReport& report) {
  const auto t0 = Clock::now();
  bool gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    prefill_.reset();
    gone = client_gone_;
  }
  if (gone) {
    decision_.replica->state().OnAbandoned();
    guard_.Release();
    return Finish("cancelled");
  }
  ctx_.metrics->RecordPd(decision_.replica->model(), report.outcome);
  if (report.calls > 0) ctx_.metrics->RecordPrefillSeconds(report.seconds);
  if (report.outcome == PdOutcome::kDisaggregated) {
    prefill_replica_ = report.replica->id();
  } else {
    PAGODA_LOG(Warning) << "gateway: no prefill for " << decision_.replica->id() << " (" << report.failure
                        << "); it prefills the prompt itself";
  }
  SendToReplica(t0);
}

http::UpstreamRequest Exchange::UpstreamFor(const Replica& r, std::string body) const {
  const GatewayConfig& c = table_->config();
  http::UpstreamRequest up;
  up.host = r.config().endpoint.host;
  up.port = r.config().endpoint.port;
  up.tls = r.config().endpoint.scheme == "https";
  up.ca_file = r.config().ca_file;
  up.method = req_.method;
  std::string target = req_.target;
  // An external upstream's URL includes its API root (".../v1").
  if (r.external() && target.rfind("/v1", 0) == 0) target.erase(0, 3);
  up.target = r.config().endpoint.base_path + target;
  up.headers = ForwardHeaders(req_.headers, r.external(), meter_.active());
  if (!r.external()) meter_.AddUpstreamHeaders(up.headers);
  if (r.external() && !r.external_info().api_key.empty()) {
    up.headers.Set("Authorization", "Bearer " + r.external_info().api_key);
  }
  up.headers.Set("X-Forwarded-For", req_.remote_address.substr(0, req_.remote_address.rfind(':')));
  up.body = std::move(body);
  up.connect_timeout = std::chrono::milliseconds(c.connect_timeout_ms);
  up.first_byte_timeout = std::chrono::milliseconds(c.first_byte_timeout_ms);
  up.idle_timeout = std::chrono::milliseconds(c.idle_timeout_ms);
  up.deadline = deadline_;
  return up;
}

std::string Exchange::UpstreamBody(const Replica& r) const {
  std::string served;
  if (r.external()) {
    served = r.external_info().model;
  } else if (const ModelRoute* m = table_->FindModel(r.model())) {
    served = m->config.served_model_name;
  }
  // Rewritten even without a model or usage to set: a client's own
  // kv_transfer_params never reach a replica (RewriteUpstreamBody).
  return req_.body.empty() ? req_.body : RewriteUpstreamBody(req_.body, served, meter_.force_usage());
}

http::Headers Exchange::ServedBy() const {
  http::Headers h;
  h.Add(kDeploymentHeader, decision_.deployment);
  h.Add(kReplicaHeader, decision_.replica->id());
  if (!prefill_replica_.empty()) h.Add(kPrefillReplicaHeader, prefill_replica_);
  h.Add(kPredictedCachedHeader, std::to_string(decision_.predicted_cached_tokens));
  meter_.AddResponseHeaders(h);
  return h;
}

void Exchange::OnHead(const http::UpstreamResponseHead& head) {
  status_ = head.status;
  head_headers_ = head.headers;
  if (status_ >= 500) {
    verdict_failure_ = true;
    if (attempts_ < 2 && !client_started_) {
      mode_ = Mode::kRetrying;  // drop this answer; OnDone retries
      CancelCall();
      return;
    }
  }
  const std::string* ct = head.headers.Find("Content-Type");
  const bool sse = status_ == 200 && ct != nullptr && ct->find("text/event-stream") != std::string::npos;
  if (!sse) {
    mode_ = Mode::kBuffer;
    return;
  }
  mode_ = Mode::kSse;
  const auto t0 = Clock::now();
  client_started_ = true;
  writer_->BeginSse(ServedBy());
  added_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
}

void Exchange::OnBody(std::string_view bytes) {
  if (mode_ == Mode::kBuffer) {
    if (body_.size() + bytes.size() > kMaxBufferedBody) {
      CancelCall();
      return;
    }
    body_.append(bytes);
  } else if (mode_ == Mode::kSse) {
    // Each event goes on as the upstream framed it (event:, id:, retry:,
    // comments); the events of one read go on together, in one write.
    const auto now = Clock::now();
    relay_.clear();
    const bool ok = sse_.Feed(bytes, [&](const SseEvent& ev) {
      if (ev.has_data) {
        const std::optional<ReportedUsage> u = ReadUsage(ev.data);
        if (u) usage_ = u;  // the include_usage chunk
        if (!meter_.OnSseData(ev.data, u, now)) return true;  // usage only the gateway asked for
      }
      relay_.append(ev.block);
      relay_ += '\n';
      return true;
    });
    if ((!relay_.empty() && !writer_->SendSseEvents(relay_)) || !ok) {
      CancelCall();  // client gone, or an oversized event (garbage)
    }
  }
}

void Exchange::OnDone(const http::UpstreamOutcome& o) {
  const auto now = Clock::now();
  bool gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gone = client_gone_;
  }
  ReplicaState& state = decision_.replica->state();
  const std::string& rid = decision_.replica->id();
  const bool failed_call = o.error != http::UpstreamError::kNone && o.error != http::UpstreamError::kCancelled &&
                           o.error != http::UpstreamError::kDeadline;
  if (failed_call) ctx_.metrics->RecordUpstreamError(rid, http::UpstreamErrorName(o.error));
  if (sse_.overflowed()) ctx_.metrics->RecordUpstreamError(rid, "garbage");
  if (failed_call || verdict_failure_ || sse_.overflowed()) {
    state.OnFailure(now);
  } else if (o.error == http::UpstreamError::kNone) {
    state.OnSuccess(now);
  } else {
    state.OnAbandoned();
  }
  guard_.Release();
  if (gone) return Finish("cancelled");
  const bool retryable = mode_ == Mode::kRetrying || (failed_call && !client_started_ && mode_ != Mode::kSse);
  if (retryable && attempts_ < 2) {
    ctx_.metrics->RecordRequest(rid, decision_.deployment, decision_.policy, "retried");
    ctx_.metrics->RecordRetry(decision_.deployment);
    route_.exclude.insert(rid);
    route_.avoid_deployment = decision_.deployment;
    const auto t0 = Clock::now();
    if (Dispatch(/*retry=*/true)) {
      added_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
      return;
    }
  }
  const bool timed_out = o.error == http::UpstreamError::kTimeout || o.error == http::UpstreamError::kDeadline;
  if (mode_ == Mode::kSse) {
    if (o.error == http::UpstreamError::kNone && !sse_.overflowed()) {
      writer_->EndSse();
      return Finish("2xx");
    }
    EndStreamWithError(timed_out ? "The upstream replica timed out mid-stream."
                                 : "The upstream replica failed mid-stream (" + o.message + ").");
    return Finish("5xx");
  }
  if (o.error == http::UpstreamError::kNone && mode_ == Mode::kBuffer) {
    const auto t0 = Clock::now();
    http::Response r;
    r.status = status_;
    const std::string* ct = head_headers_.Find("Content-Type");
    r.content_type = ct != nullptr ? *ct : "application/octet-stream";
    r.headers = ServedBy();
    for (const char* keep : {"Retry-After", "x-request-id"}) {
      if (const std::string* v = head_headers_.Find(keep)) r.headers.Set(keep, *v);
    }
    if (status_ / 100 == 2) usage_ = ReadUsage(body_);
    meter_.OnBodyUsage(usage_);
    r.body = std::move(body_);
    writer_->Respond(std::move(r));
    added_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    return Finish(StatusClass(status_));
  }
  if (mode_ == Mode::kRetrying) {
    Fail(UpstreamFailure(502, "The upstream replica answered " + std::to_string(status_) + ".", "bad_gateway"));
  } else if (o.error == http::UpstreamError::kDeadline) {
    Fail(UpstreamFailure(504, "The request ran past its deadline.", "deadline_exceeded"));
  } else if (timed_out) {
    Fail(UpstreamFailure(504, "The upstream replica did not answer in time.", "upstream_timeout"));
  } else {
    PAGODA_LOG(Warning) << "gateway: " << rid << " failed: " << http::UpstreamErrorName(o.error) << ": " << o.message;
    // A TLS failure is the operator's to fix: say which (the message names
    // host and certificate problem, never headers or bodies).
    const std::string detail = o.error == http::UpstreamError::kTls ? " (" + o.message + ")" : "";
    Fail(UpstreamFailure(502, "The upstream replica failed: " + std::string(http::UpstreamErrorName(o.error)) +
                                  detail + ".",
                         "bad_gateway"));
  }
  Finish("5xx");
}

void Exchange::EndStreamWithError(const std::string& message) {
  writer_->SendSse(UpstreamFailure(502, message, "upstream_error").ToJsonString());
  writer_->EndSse();
}

void Exchange::Fail(const api::ApiError& e) {
  http::Response r = ErrorOf(e);
  if (decision_.replica) r.headers = ServedBy();
  writer_->Respond(std::move(r));
  meter_.Finish(UsageStatusOf(e.status), e.status, decision_.deployment, Clock::now());
}

void Exchange::Finish(const std::string& status_class) {
  if (status_class == "cancelled") {
    meter_.Finish(tenancy::UsageStatus::kCancelled, 499, decision_.deployment, Clock::now());
  } else if (mode_ == Mode::kSse) {
    const bool ok = status_class == "2xx";
    meter_.Finish(ok ? tenancy::UsageStatus::kOk : tenancy::UsageStatus::kError, ok ? 200 : 502, decision_.deployment,
                  Clock::now());
  } else {
    meter_.Finish(UsageStatusOf(status_), status_, decision_.deployment, Clock::now());
  }
  if (decision_.replica) {
    ctx_.metrics->RecordRequest(decision_.replica->id(), decision_.deployment, decision_.policy, status_class);
    if (status_class == "2xx") {
      ctx_.metrics->RecordCachedTokens(decision_.replica->id(), decision_.deployment,
                                       decision_.predicted_cached_tokens, usage_);
    }
  }
  ctx_.metrics->RecordAddedLatency(added_seconds_);
  std::lock_guard<std::mutex> lock(mu_);
  call_.reset();
}

void Exchange::OnClientGone() {
  std::shared_ptr<http::UpstreamCall> call;
  std::shared_ptr<PrefillLeg> prefill;
  {
    std::lock_guard<std::mutex> lock(mu_);
    client_gone_ = true;
    call = call_;
    prefill = prefill_;
  }
  if (call) call->Cancel();
  if (prefill) prefill->Cancel();
}

}  // namespace

http::Headers ForwardHeaders(const http::Headers& in, bool external, bool strip_auth) {
  http::Headers out;
  for (const auto& [k, v] : in.fields()) {
    if (IsHopByHop(k) || IsTenantHeader(k)) continue;
    if ((external || strip_auth) && http::EqualsIgnoreCase(k, "authorization")) continue;
    if (strip_auth && http::EqualsIgnoreCase(k, "x-api-key")) continue;
    out.Add(k, v);
  }
  return out;
}

void ProxyRequest(const ProxyContext& ctx, std::shared_ptr<const RoutingTable> table, const http::Request& request,
                  std::shared_ptr<http::ResponseWriter> writer) {
  auto ex = std::make_shared<Exchange>(ctx, std::move(table), request, std::move(writer));
  ex->Start();
}

}  // namespace pagoda::gateway
