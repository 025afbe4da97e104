#include "gateway/prefill_leg.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tenancy/api_key.h"

namespace pagoda::gateway {
namespace {

// A prefill answer is one small completion; more is garbage.
constexpr size_t kMaxPrefillAnswer = size_t{1} << 20;
// How many prefill replicas one request may try.
constexpr int kMaxPrefillCalls = 2;

}  // namespace

Result<std::string> PrefillBody(std::string_view client_body, std::string_view served_model,
                                const KvTransferRequest& transfer) {
  nlohmann::json j = nlohmann::json::parse(client_body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("the request body is not a JSON object");
  for (const char* key : {"max_completion_tokens", "stream_options", "logprobs", "top_logprobs"}) j.erase(key);
  j["stream"] = false;
  j["max_tokens"] = 1;
  j["n"] = 1;
  if (!served_model.empty()) j["model"] = std::string(served_model);
  j["kv_transfer_params"] = {
      {"do_remote_decode", true}, {"remote_addr", transfer.remote_addr}, {"transfer_id", transfer.transfer_id}};
  return j.dump();
}

Result<KvTransferResult> ParseKvTransferResult(std::string_view body, std::string_view transfer_id) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("the prefill answer is not a JSON object");
  const auto p = j.find("kv_transfer_params");
  if (p == j.end() || !p->is_object()) return InvalidArgument("the prefill answer has no kv_transfer_params");
  KvTransferResult r;
  const auto str = [&](const char* key) {
    const auto v = p->find(key);
    return v != p->end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  const auto num = [&](const char* key) {
    const auto v = p->find(key);
    return v != p->end() && v->is_number_integer() ? v->get<int64_t>() : int64_t{0};
  };
  r.transfer_id = str("transfer_id");
  r.status = str("status");
  r.error = str("error");
  r.blocks = num("blocks");
  r.bytes = num("bytes");
  if (r.transfer_id != transfer_id) {
    return InvalidArgument("the prefill answer names transfer '" + r.transfer_id + "', not '" +
                           std::string(transfer_id) + "'");
  }
  if (r.status != "ok" && r.status != "failed") {
    return InvalidArgument("the prefill answer's kv_transfer_params.status is '" + r.status +
                           "' (expected ok or failed)");
  }
  return r;
}

PrefillLeg::PrefillLeg(http::UpstreamClient* client, GatewayMetrics* metrics, PrefillLegPlan plan,
                       RequestFor request_for)
    : client_(client), metrics_(metrics), plan_(std::move(plan)), request_for_(std::move(request_for)) {}

void PrefillLeg::Start(Done done) {
  done_ = std::move(done);
  started_ = Clock::now();
  Next();
}

void PrefillLeg::Next() {
  bool cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled = cancelled_;
  }
  if (cancelled) return Report(PdOutcome::kPrefillFailed, "cancelled", {}, /*cancelled=*/true);
  for (;;) {
    replica_ = PickPrefillReplica(*plan_.deployment, *plan_.decode, tried_, plan_.workload_class, Clock::now());
    if (!replica_) {
      return Report(PdOutcome::kPrefillFailed,
                    last_failure_.empty() ? "no prefill replica is available" : last_failure_);
    }
    tried_.insert(replica_->id());
    if (replica_->state().OnSend(Clock::now())) break;  // else its circuit closed just now: the next one
  }
  auto id = tenancy::RandomId("", 16);
  auto body = id.ok() ? PrefillBody(plan_.client_body, plan_.served_model, {plan_.decode->config().kv_transfer, *id})
                      : Result<std::string>(id.status());
  if (!body.ok()) {
    replica_->state().OnAbandoned();
    return Report(PdOutcome::kPrefillFailed, body.status().message());
  }
  transfer_id_ = std::move(id).value();
  ++calls_;
  guard_ = LoadGuard(replica_->shared_state(), plan_.blocks);
  status_ = 0;
  body_.clear();
  overflow_ = false;
  http::UpstreamRequest up = request_for_(*replica_, std::move(body).value());
  up.first_byte_timeout = plan_.timeout;  // the answer comes once the transfer is acknowledged
  up.deadline = std::min(plan_.deadline, Clock::now() + plan_.timeout);
  auto self = shared_from_this();
  http::UpstreamEvents ev;
  ev.on_head = [self](const http::UpstreamResponseHead& h) { self->status_ = h.status; };
  ev.on_body = [self](std::string_view b) {
    if (self->body_.size() + b.size() > kMaxPrefillAnswer) {
      self->overflow_ = true;
    } else if (!self->overflow_) {
      self->body_.append(b);
    }
  };
  ev.on_done = [self](const http::UpstreamOutcome& o) { self->OnCallDone(o); };
  uint64_t generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    call_.reset();
    generation = ++generation_;
  }
  // The call may end, and the next one start, before Start returns: only
  // the latest call is kept for Cancel.
  auto call = client_->Start(std::move(up), std::move(ev));
  std::lock_guard<std::mutex> lock(mu_);
  if (generation_ == generation) call_ = call;
  if (cancelled_) call->Cancel();
}

void PrefillLeg::OnCallDone(const http::UpstreamOutcome& o) {
  const auto now = Clock::now();
  guard_.Release();
  bool cancelled;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled = cancelled_;
    call_.reset();
  }
  ReplicaState& state = replica_->state();
  const std::string& rid = replica_->id();
  if (cancelled || o.error == http::UpstreamError::kCancelled) {
    state.OnAbandoned();
    return Report(PdOutcome::kPrefillFailed, "cancelled", {}, /*cancelled=*/true);
  }
  bool retry = true;
  if (o.error != http::UpstreamError::kNone) {
    metrics_->RecordUpstreamError(rid, http::UpstreamErrorName(o.error));
    state.OnFailure(now);
    last_failure_ = rid + ": " + http::UpstreamErrorName(o.error) + " (" + o.message + ")";
  } else if (status_ >= 500 || overflow_) {
    if (overflow_) metrics_->RecordUpstreamError(rid, "garbage");
    state.OnFailure(now);
    last_failure_ = rid + ": answered " + std::to_string(status_) + (overflow_ ? " (oversized)" : "");
  } else if (status_ / 100 != 2) {
    state.OnSuccess(now);  // the request's fault, not the replica's: another one would answer the same
    last_failure_ = rid + ": answered " + std::to_string(status_);
    retry = false;
  } else {
    state.OnSuccess(now);
    auto t = ParseKvTransferResult(body_, transfer_id_);
    if (t.ok() && t->ok()) return Report(PdOutcome::kDisaggregated, "", std::move(t).value());
    // A transfer the replica reports failed is most likely the decode side's
    // (its listener): another prefill replica would fail the same way.
    retry = !t.ok();
    last_failure_ = rid + ": " + (t.ok() ? "the KV transfer failed: " + t->error : t.status().message());
  }
  if (retry && calls_ < kMaxPrefillCalls && now < plan_.deadline) return Next();
  Report(PdOutcome::kPrefillFailed, last_failure_);
}

void PrefillLeg::Report(PdOutcome outcome, std::string failure, KvTransferResult transfer, bool cancelled) {
  PrefillLegReport r;
  r.outcome = outcome;
  r.cancelled = cancelled;
  r.calls = calls_;
  if (outcome == PdOutcome::kDisaggregated) r.replica = replica_;
  r.transfer = std::move(transfer);
  r.failure = std::move(failure);
  r.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  Done done;
  done.swap(done_);  // exactly once
  if (done) done(r);
}

void PrefillLeg::Cancel() {
  std::shared_ptr<http::UpstreamCall> call;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    call = call_;
  }
  if (call) call->Cancel();
}

}  // namespace pagoda::gateway
