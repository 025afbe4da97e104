// RequestInfo: what the gateway reads from an OpenAI request body to route it
// (model, stream, max_tokens, user, service_tier, an estimate of the prompt's
// size) without interpreting anything else; RequestClass decides the
// request's workload class; RewriteModel swaps the model name for the one the
// chosen backend serves. Bodies are never logged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "base/workload_class.h"
#include "control/control_plane.h"
#include "http/message.h"

namespace pagoda::gateway {

struct RequestInfo {
  std::string model;
  bool stream = false;
  int64_t max_tokens = 0;    // max_tokens / max_completion_tokens; 0 when absent
  std::string user;          // the `user` field; "" when absent
  std::string prompt_text;   // messages' text contents joined, or the prompt
  int64_t prompt_tokens = 0; // estimate: prompt bytes / 4, rounded up
  bool include_usage = false; // stream_options.include_usage
  // `service_tier` (ParseWorkloadClass: ours or OpenAI's names); nullopt when
  // absent, "auto" or unknown.
  std::optional<WorkloadClass> service_tier;
};

// The header that names a request's class (ParseWorkloadClass's names); it
// wins over the body's service_tier.
using control::kServiceTierHeader;

// The class a request asks for: the header when it names one, else the
// body's service_tier; nullopt when neither does ("auto" counts as neither).
std::optional<WorkloadClass> RequestedClass(const RequestInfo& info, const http::Request& request);

// The one place a request's workload class is decided: RequestedClass, else
// interactive. (With a control plane the caller's key will clamp it here:
// ControlPlane::ResolveClass(caller, RequestedClass(...)).)
WorkloadClass RequestClass(const RequestInfo& info, const http::Request& request);

// Errors (400): not JSON, not an object, no string `model` (when required).
api::ApiResult<RequestInfo> ParseRequestInfo(std::string_view body, bool model_required = true);

// The body with "model" set to `model` (the body is valid JSON: parsed before).
std::string RewriteModel(std::string_view body, std::string_view model);

// The body sent upstream: "model" set to `model` when non-empty and, with
// `force_usage`, stream_options.include_usage set so that a stream ends with
// the usage the gateway meters (the client gets that chunk only if it asked);
// a client's kv_transfer_params removed (only the gateway's prefill leg sends
// them). The body is returned as it came when nothing changes.
std::string RewriteUpstreamBody(std::string_view body, std::string_view model, bool force_usage);

}  // namespace pagoda::gateway
