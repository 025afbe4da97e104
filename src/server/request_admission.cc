#include "server/request_admission.h"

#include <algorithm>
#include <memory>
#include <variant>

#include "api/response_common.h"
#include "control/control_plane.h"
#include "server/tenant_resolver.h"

namespace pagoda::server {

std::optional<http::Response> AdmitGeneration(ServeContext& ctx, const http::Request& request,
                                              const std::string& model, int64_t prompt_tokens, int64_t max_tokens,
                                              std::optional<WorkloadClass> requested, JobSpec& spec) {
  if (const std::string* h = request.headers.Find(kServiceTierHeader); h != nullptr && *h != "auto") {
    requested = ParseWorkloadClass(*h);
    if (!requested) {
      return http::ErrorResponse(400, std::string(kServiceTierHeader) +
                                          " must be one of auto, default, flex, priority, interactive, batch, realtime",
                                 "invalid_value");
    }
  }
  if (ctx.control == nullptr) {
    spec.tenant = ResolveTenant(ctx, request.headers);
    if (!spec.tenant.signed_context) {
      WorkloadClass c = requested.value_or(WorkloadClass::kInteractive);
      // Behind a gateway, only its signed headers may ask for real-time.
      if (!ctx.tenant_secret.empty()) c = std::min(c, WorkloadClass::kInteractive);
      spec.tenant.workload_class = c;
    }
    return std::nullopt;
  }
  control::ControlPlane& cp = *ctx.control;
  auto who = cp.Authenticate(request, model);
  if (auto* refused = std::get_if<http::Response>(&who)) return std::move(*refused);
  auto caller = std::make_shared<control::Caller>(std::move(std::get<control::Caller>(who)));
  const std::string request_id = api::NewResponseId("req");
  auto ticket = cp.Admit(*caller, model, prompt_tokens, max_tokens, request_id);
  if (auto* refused = std::get_if<http::Response>(&ticket)) return std::move(*refused);
  auto t = std::make_shared<control::Ticket>(std::move(std::get<control::Ticket>(ticket)));
  // The gateway's headers for an admitted request (ControlPlane::Admit, as
  // gateway/request_meter sends them), on whatever the job answers.
  for (const auto& h : t->headers) spec.response_headers.Set(h.name, h.value);
  spec.tenant.tenant = caller->tenant.id;
  spec.tenant.weight = caller->tenant.weight;
  spec.tenant.priority = caller->priority;
  spec.tenant.cache_salt = caller->cache_scope;
  const WorkloadClass cls = control::ResolveClass(*caller, requested);
  spec.tenant.workload_class = cls;
  spec.on_finish = [&cp, caller, t, request_id, model, deployment = ctx.model_id, cls](const JobOutcome& j) {
    control::RequestOutcome o;
    o.service_tier = cls;
    o.request_id = request_id;
    o.model = model;
    o.deployment = deployment;
    o.prompt_tokens = j.prompt_tokens;
    o.cached_tokens = j.cached_tokens;
    o.completion_tokens = j.completion_tokens;
    o.ttft_seconds = j.ttft_seconds;
    o.mean_itl_seconds = j.mean_itl_seconds;
    o.total_seconds = j.total_seconds;
    o.status = j.failed      ? tenancy::UsageStatus::kError
               : j.cancelled ? tenancy::UsageStatus::kCancelled
                             : tenancy::UsageStatus::kOk;
    o.http_status = j.failed ? 500 : j.cancelled ? 499 : 200;
    cp.Finish(*t, *caller, o);
  };
  return std::nullopt;
}

}  // namespace pagoda::server
