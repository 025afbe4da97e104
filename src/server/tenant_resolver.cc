#include "server/tenant_resolver.h"

#include <chrono>

#include "base/log.h"
#include "tenancy/signed_headers.h"

namespace pagoda::server {

TenantFields ResolveTenant(const ServeContext& ctx, const http::Headers& headers) {
  TenantFields out;
  if (ctx.tenant_secret.empty()) return out;  // tenant headers are ignored without a secret
  const tenancy::VerifyResult v = tenancy::VerifyTenantHeaders(
      [&headers](std::string_view name) { return headers.Find(name); }, ctx.tenant_secret,
      std::chrono::system_clock::now(), ctx.tenant_replay);
  if (!v.ok()) {
    if (v.outcome != tenancy::VerifyOutcome::kAbsent) {
      PAGODA_LOG(Info) << "tenant headers ignored (" << tenancy::VerifyOutcomeName(v.outcome)
                       << "): the request runs as the anonymous tenant";
    }
    return out;
  }
  out.tenant = v.context.tenant;
  out.weight = v.context.weight;
  out.priority = v.context.priority;
  out.cache_salt = v.context.cache_scope;
  out.workload_class = v.context.workload_class;
  out.signed_context = true;
  return out;
}

}  // namespace pagoda::server
