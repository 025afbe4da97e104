#include "control/admin_json.h"

namespace pagoda::control {

using json = nlohmann::json;

json TimeJson(int64_t ms) {
  if (ms == 0) return nullptr;
  return ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
}

json ClassJson(const std::optional<WorkloadClass>& c) {
  if (!c) return nullptr;
  return WorkloadClassName(*c);
}

json TenantJson(const tenancy::Tenant& t) {
  return {{"object", "tenant"},
          {"id", t.id},
          {"name", t.name},
          {"plan", tenancy::PlanKindName(t.plan)},
          {"weight", t.weight},
          {"share_cache_across_keys", t.share_cache_across_keys},
          {"dedicated_deployment", t.dedicated_deployment.empty() ? json(nullptr) : json(t.dedicated_deployment)},
          {"disabled", t.disabled},
          {"max_class", ClassJson(t.max_class)},
          {"default_class", WorkloadClassName(t.default_class)},
          {"created_at", TimeJson(t.created_at)}};
}

json KeyJson(const tenancy::ApiKey& k, int64_t now_ms) {
  const char* status = k.revoked() ? "revoked" : k.expired(now_ms) ? "expired" : "active";
  return {{"object", "api_key"},
          {"id", k.id},
          {"tenant", k.tenant_id},
          {"name", k.name},
          {"models", k.models},
          {"created_at", TimeJson(k.created_at)},
          {"expires_at", TimeJson(k.expires_at)},
          {"revoked_at", TimeJson(k.revoked_at)},
          {"max_class", ClassJson(k.max_class)},
          {"status", status}};
}

json LimitJson(const tenancy::LimitRule& r) {
  return {{"object", "limit"},
          {"scope", tenancy::LimitScopeName(r.scope)},
          {"id", r.scope_id},
          {"model", r.model},
          {"rpm", r.limits.rpm},
          {"tpm", r.limits.tpm},
          {"concurrent", r.limits.concurrent}};
}

json ReservationJson(const tenancy::Reservation& r) {
  return {{"object", "reservation"},
          {"tenant", r.tenant_id},
          {"model", r.model},
          {"tokens_per_second", r.tokens_per_second}};
}

json PriceJson(const tenancy::Price& p) {
  return {{"object", "price"},
          {"model", p.model},
          {"input_per_mtok", p.input_per_mtok},
          {"cached_input_per_mtok", p.cached_input_per_mtok},
          {"output_per_mtok", p.output_per_mtok},
          {"replica_hour", p.replica_hour},
          {"batch_factor", p.batch_factor}};
}

json ListJson(json items) {
  if (!items.is_array()) items = json::array();
  return {{"object", "list"}, {"data", std::move(items)}};
}

}  // namespace pagoda::control
