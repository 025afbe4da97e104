#include "gateway/request_meter.h"

#include <variant>

#include "api/response_common.h"
#include "kvevents/kv_event.h"

namespace pagoda::gateway {

RequestMeter::RequestMeter(control::ControlPlane* control, Clock::time_point received)
    : control_(control), received_(received) {}

std::optional<http::Response> RequestMeter::Admit(const http::Request& request, const RequestInfo& info,
                                                  int64_t prompt_tokens) {
  if (!control_) return std::nullopt;
  model_ = info.model;
  info_stream_ = info.stream;
  client_wants_usage_ = info.include_usage;
  prompt_estimate_ = prompt_tokens;
  request_id_ = api::NewResponseId("req");
  auto who = control_->Authenticate(request, info.model);
  if (auto* refused = std::get_if<http::Response>(&who)) return std::move(*refused);
  caller_ = std::move(std::get<control::Caller>(who));
  auto ticket = control_->Admit(*caller_, info.model, prompt_tokens, info.max_tokens, request_id_);
  if (auto* refused = std::get_if<http::Response>(&ticket)) {
    finished_ = true;  // Admit recorded the refusal
    return std::move(*refused);
  }
  ticket_ = std::move(std::get<control::Ticket>(ticket));
  admitted_ = true;
  return std::nullopt;
}

uint64_t RequestMeter::cache_scope_digest() const {
  return caller_ && !caller_->cache_scope.empty() ? kvevents::SaltDigest(caller_->cache_scope) : 0;
}

void RequestMeter::AddUpstreamHeaders(http::Headers& headers) const {
  if (!caller_) return;
  for (const auto& [name, value] : control_->SignedHeaders(*caller_, request_id_, class_)) headers.Set(name, value);
}

void RequestMeter::AddResponseHeaders(http::Headers& headers) const {
  for (const auto& h : ticket_.headers) headers.Set(h.name, h.value);
}

bool RequestMeter::OnSseData(std::string_view data, const std::optional<ReportedUsage>& usage,
                             Clock::time_point now) {
  if (!active()) return true;
  if (usage) {
    usage_ = usage;
    if (usage->usage_only) return !force_usage();
  }
  if (data == "[DONE]" || data.find("\"choices\"") == std::string_view::npos) return true;
  if (content_events_ == 0) first_event_ = now;
  last_event_ = now;
  ++content_events_;
  return true;
}

void RequestMeter::Finish(tenancy::UsageStatus status, int http_status, std::string_view deployment,
                          Clock::time_point now) {
  if (!caller_ || finished_) return;
  finished_ = true;
  control::RequestOutcome o;
  o.request_id = request_id_;
  o.model = model_;
  const size_t at = deployment.find('@');
  o.deployment = std::string(deployment);
  if (at != std::string_view::npos) o.version = std::string(deployment.substr(at + 1));
  if (usage_) {
    o.prompt_tokens = usage_->prompt_tokens;
    o.cached_tokens = usage_->cached_tokens.value_or(0);
    o.completion_tokens = usage_->completion_tokens;
  } else if (status != tenancy::UsageStatus::kOk || content_events_ > 0) {
    // No usage came back (cancelled, failed mid-stream): what was sent.
    o.prompt_tokens = content_events_ > 0 || status == tenancy::UsageStatus::kCancelled ? prompt_estimate_ : 0;
    o.completion_tokens = content_events_;
  }
  o.total_seconds = std::chrono::duration<double>(now - received_).count();
  if (content_events_ > 0) {
    o.ttft_seconds = std::chrono::duration<double>(first_event_ - received_).count();
    if (content_events_ > 1) {
      o.mean_itl_seconds =
          std::chrono::duration<double>(last_event_ - first_event_).count() / static_cast<double>(content_events_ - 1);
    }
  } else if (status == tenancy::UsageStatus::kOk && o.completion_tokens > 0) {
    o.ttft_seconds = o.total_seconds;  // a whole body: its first token came with the rest
  }
  o.status = status;
  o.http_status = http_status;
  o.service_tier = class_;
  control_->Finish(ticket_, *caller_, o);
}

}  // namespace pagoda::gateway
