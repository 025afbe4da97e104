// MakePolicy: the RoutingPolicy for a model's `policy` name.
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "gateway/gateway_config.h"
#include "gateway/kv_index.h"
#include "gateway/routing_policy.h"

namespace pagoda::gateway {

// Names: cache_aware, least_loaded, power_of_two, round_robin, session.
// `index`: the model's event-fed KvIndex (cache_aware reads it; the policy
// shares ownership so a reload may hand the same index to a new policy);
// null routes cache_aware on its approximate tree alone.
// Error: an unknown name.
Result<std::unique_ptr<RoutingPolicy>> MakePolicy(std::string_view name, const ModelConfig& model,
                                                  std::shared_ptr<const KvIndex> index = nullptr);

}  // namespace pagoda::gateway
