#include "gateway/policy_factory.h"

#include <string>

#include "gateway/cache_aware_policy.h"
#include "gateway/least_loaded_policy.h"
#include "gateway/power_of_two_policy.h"
#include "gateway/round_robin_policy.h"
#include "gateway/session_policy.h"

namespace pagoda::gateway {

Result<std::unique_ptr<RoutingPolicy>> MakePolicy(std::string_view name, const ModelConfig& model,
                                                  std::shared_ptr<const KvIndex> index) {
  if (name == "least_loaded") return std::unique_ptr<RoutingPolicy>(std::make_unique<LeastLoadedPolicy>());
  if (name == "power_of_two") return std::unique_ptr<RoutingPolicy>(std::make_unique<PowerOfTwoPolicy>());
  if (name == "round_robin") return std::unique_ptr<RoutingPolicy>(std::make_unique<RoundRobinPolicy>());
  if (name == "session") return std::unique_ptr<RoutingPolicy>(std::make_unique<SessionPolicy>());
  if (name == "cache_aware") {
    CacheAwareOptions options;
    options.decode_block_weight = model.decode_load_weight;
    return std::unique_ptr<RoutingPolicy>(CacheAwarePolicy::Sharing(std::move(index), std::move(options)));
  }
  return InvalidArgument("unknown routing policy '" + std::string(name) + "'");
}

}  // namespace pagoda::gateway
