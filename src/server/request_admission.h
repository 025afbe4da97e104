// Admission of a generation request through the control plane when
// `pagoda serve --db` runs one (control/control_plane.h, the same library
// the gateway uses): the caller's key is authenticated and scoped to the
// model, the request is admitted against its limits, its engine requests
// get the tenant's fair-share weight, priority and prefix-cache scope, and
// the job meters it when it ends (JobSpec::on_finish). Without a control
// plane it only applies the signed tenant headers (tenant_resolver.h).
// Any thread.
#pragma once

#include <optional>
#include <string>

#include "http/message.h"
#include "server/generation_job.h"
#include "server/serve_context.h"

namespace pagoda::server {

// The workload class (docs/SCHEDULING.md): the header x-pagoda-service-tier
// or else the body's service_tier (`requested`), clamped by the control
// plane to what the caller's key allows; without a control plane the gateway's
// signed class, else the request's own (at most interactive when this replica
// expects signed tenant headers and got none).
//
// nullopt: go on (spec.tenant, spec.on_finish and spec.response_headers, the
// x-ratelimit-* of the admission, are set); otherwise the response to send
// (400 bad x-pagoda-service-tier, 401/403/429/503, refusals with their
// x-ratelimit-* and retry-after).
std::optional<http::Response> AdmitGeneration(ServeContext& ctx, const http::Request& request,
                                              const std::string& model, int64_t prompt_tokens, int64_t max_tokens,
                                              std::optional<WorkloadClass> requested, JobSpec& spec);

using control::kServiceTierHeader;

}  // namespace pagoda::server
