// MakePolicy: the RoutingPolicy for a model's `policy` name.
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "gateway/gateway_config.h"
#include "gateway/routing_policy.h"

namespace pagoda::gateway {

// Names: cache_aware, least_loaded, power_of_two, round_robin, session.
// Error: an unknown name.
Result<std::unique_ptr<RoutingPolicy>> MakePolicy(std::string_view name, const ModelConfig& model);

}  // namespace pagoda::gateway
