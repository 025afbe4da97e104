// RequestMeter: one proxied request's side of the control plane
// (control/control_plane.h): authenticate and admit it before routing, tell
// the replica who it is for (signed tenant headers), watch the stream for its
// token timings and usage, and meter it once when the exchange ends, however
// it ends. Without a control plane every call is a no-op.
//
// Streams: a metered stream asks the replica for its usage chunk
// (stream_options.include_usage) and drops that chunk again when the client
// did not ask for it. When no usage arrives (the client left, the replica
// failed mid-stream) the completion tokens are the content chunks relayed,
// one token each, as Pagoda and vLLM stream them.
//
// Reads metadata only: counts, times, ids; never a body's text.
// Thread safety: one exchange's callbacks run one at a time (the proxy's
// upstream callbacks), so no locking; Finish is idempotent.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "control/control_plane.h"
#include "gateway/request_info.h"
#include "gateway/usage_reader.h"
#include "http/message.h"

namespace pagoda::gateway {

class RequestMeter {
 public:
  using Clock = std::chrono::steady_clock;

  RequestMeter() = default;
  RequestMeter(control::ControlPlane* control, Clock::time_point received);

  bool active() const { return control_ != nullptr; }
  // Authenticates and admits the request (the model as sent, the prompt's
  // size in tokens). A response to send instead when refused (401/403/429/503).
  std::optional<http::Response> Admit(const http::Request& request, const RequestInfo& info, int64_t prompt_tokens);
  const control::Caller* caller() const { return caller_ ? &*caller_ : nullptr; }
  // The request's workload class (signed to the replica, recorded in usage).
  void set_workload_class(WorkloadClass c) { class_ = c; }
  // XXH3-64 of the caller's cache scope (0 when unmetered): the routing salt.
  uint64_t cache_scope_digest() const;

  // The upstream body: forces usage on a metered stream.
  bool force_usage() const { return active() && info_stream_ && !client_wants_usage_; }
  // Signed tenant headers and x-request-id for the replica.
  void AddUpstreamHeaders(http::Headers& headers) const;
  // x-ratelimit-* for the client's response.
  void AddResponseHeaders(http::Headers& headers) const;

  // One SSE `data` payload from the replica with the usage ReadUsage found
  // in it; false: do not relay it (the forced usage chunk).
  bool OnSseData(std::string_view data, const std::optional<ReportedUsage>& usage, Clock::time_point now);
  void OnBodyUsage(const std::optional<ReportedUsage>& usage) { if (usage) usage_ = usage; }

  // Meters the request once: `status` as the client saw it.
  void Finish(tenancy::UsageStatus status, int http_status, std::string_view deployment, Clock::time_point now);

 private:
  control::ControlPlane* control_ = nullptr;
  Clock::time_point received_;
  std::optional<control::Caller> caller_;
  WorkloadClass class_ = WorkloadClass::kInteractive;
  control::Ticket ticket_;
  bool admitted_ = false;
  bool finished_ = false;
  bool info_stream_ = false;
  bool client_wants_usage_ = false;
  std::string model_;
  std::string request_id_;
  int64_t prompt_estimate_ = 0;
  std::optional<ReportedUsage> usage_;
  int64_t content_events_ = 0;
  Clock::time_point first_event_{}, last_event_{};
};

}  // namespace pagoda::gateway
