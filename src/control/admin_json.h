// The admin API's JSON views of control-plane records. Times go out as unix
// seconds (null when unset), like the OpenAI API's `created`.
//
// Zero retention: KeyJson has no hash and no secret; the one place a secret
// appears is the create / rotate response, which adds "key" to KeyJson.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/workload_class.h"
#include "tenancy/records.h"

namespace pagoda::control {

// {"object":"tenant","id","name","plan","weight","share_cache_across_keys",
//  "dedicated_deployment" (null when none),"disabled","max_class" (null: the
//  plan's),"default_class","created_at"}
nlohmann::json TenantJson(const tenancy::Tenant& t);
// {"object":"api_key","id","tenant","name","models","created_at","expires_at",
//  "revoked_at","max_class" (null: the tenant's),"status": "active"|"revoked"|"expired"}
//  (status as of now_ms)
nlohmann::json KeyJson(const tenancy::ApiKey& k, int64_t now_ms);
// {"object":"limit","scope","id","model","rpm","tpm","concurrent"}
nlohmann::json LimitJson(const tenancy::LimitRule& r);
// {"object":"reservation","tenant","model","tokens_per_second"}
nlohmann::json ReservationJson(const tenancy::Reservation& r);
// {"object":"price","model","input_per_mtok","cached_input_per_mtok","output_per_mtok","replica_hour",
//  "batch_factor"}
nlohmann::json PriceJson(const tenancy::Price& p);
// {"object":"list","data": items}
nlohmann::json ListJson(nlohmann::json items);

// A class's name, or null when unset.
nlohmann::json ClassJson(const std::optional<WorkloadClass>& c);

// Unix milliseconds -> seconds, or null for 0.
nlohmann::json TimeJson(int64_t ms);

}  // namespace pagoda::control
