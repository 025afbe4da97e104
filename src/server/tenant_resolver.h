// Tenant of an HTTP generation request: from the gateway's signed tenant
// headers (tenancy/signed_headers.h, docs/CONTROL_PLANE_SIGNING.md) when
// `pagoda serve --tenant-secret-env` configured a secret and they verify;
// otherwise the anonymous default (tenant "", weight 1, priority 0, cache
// salt ""). Never an error for the client: a replica reached directly still
// serves, just without a tenant's share, priority or cache scope.
// Any thread (the replay cache is thread-safe).
#pragma once

#include <cstdint>
#include <string>

#include "engine/engine_request.h"
#include "http/message.h"
#include "server/serve_context.h"

namespace pagoda::server {

// What a request's tenant sets in each of its EngineRequests.
struct TenantFields {
  std::string tenant;      // "" anonymous
  double weight = 1;
  int32_t priority = 0;
  std::string cache_salt;  // x-pagoda-cache-scope verbatim (the API has no request-level salt)
  // The request's workload class: the gateway's (signed), the control
  // plane's resolution, or the request's own service_tier (request_admission.h).
  WorkloadClass workload_class = WorkloadClass::kInteractive;
  bool signed_context = false;  // tenant headers verified: the gateway decided the class
  void ApplyTo(EngineRequest& r) const {
    r.workload_class = workload_class;
    r.tenant = tenant;
    r.weight = weight;
    r.priority = priority;
    r.cache_salt = cache_salt;
  }
};

// Verifies once per HTTP request (a second call sees a replay). Logs a
// rejection at info level with its reason only, never a header value.
TenantFields ResolveTenant(const ServeContext& ctx, const http::Headers& headers);

}  // namespace pagoda::server
