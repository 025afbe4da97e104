#include "gateway/tenant_routing.h"

namespace pagoda::gateway {
namespace {

api::ApiError Forbidden(std::string message) {
  api::ApiError e;
  e.status = 403;
  e.message = std::move(message);
  e.code = "model_not_allowed";
  return e;
}

}  // namespace

const ModelRoute* ResolveModel(const RoutingTable& table, std::string_view name) {
  if (const AliasConfig* a = table.FindAlias(name)) return table.FindModel(a->model);
  return table.FindModel(SplitPinned(name).first);
}

bool VisibleTo(const RoutingTable& table, std::string_view name, const control::Caller& caller) {
  if (!caller.key.AllowsModel(name) && !caller.key.AllowsModel(SplitPinned(name).first)) return false;
  const ModelRoute* m = ResolveModel(table, name);
  return m == nullptr || m->config.tenant.empty() || m->config.tenant == caller.tenant.id;
}

api::ApiResult<std::string> TenantRoute(const RoutingTable& table, std::string_view requested,
                                        const control::Caller& caller) {
  const ModelRoute* m = ResolveModel(table, requested);
  if (m != nullptr && !m->config.tenant.empty() && m->config.tenant != caller.tenant.id) {
    return api::ModelNotFound(requested);  // another tenant's: as if it did not exist
  }
  if (caller.tenant.plan != tenancy::PlanKind::kDedicated) return std::string(requested);
  const ModelRoute* own = table.FindModel(caller.tenant.dedicated_deployment);
  if (own == nullptr || own->config.tenant != caller.tenant.id) {
    return Forbidden("This tenant's plan is dedicated, and its deployment '" + caller.tenant.dedicated_deployment +
                     "' is not served by this gateway (a [[models]] entry with tenant = \"" + caller.tenant.id +
                     "\").");
  }
  if (m == own) return std::string(requested);
  const auto served = [](const ModelRoute* r) {
    return r->config.served_model_name.empty() ? r->config.name : r->config.served_model_name;
  };
  if ((m != nullptr && served(m) == served(own)) || requested == served(own)) return own->config.name;
  return Forbidden("This tenant's plan is dedicated to the deployment '" + own->config.name + "' (model '" +
                   served(own) + "'); '" + std::string(requested) + "' is not served there.");
}

}  // namespace pagoda::gateway
