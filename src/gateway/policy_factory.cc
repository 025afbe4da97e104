#include "gateway/policy_factory.h"

#include <string>

#include "gateway/least_loaded_policy.h"
#include "gateway/power_of_two_policy.h"
#include "gateway/round_robin_policy.h"
#include "gateway/session_policy.h"

namespace pagoda::gateway {

Result<std::unique_ptr<RoutingPolicy>> MakePolicy(std::string_view name, const ModelConfig& model) {
  (void)model;  // cache_aware will read the tokenizer path and block size from it
  if (name == "least_loaded") return std::unique_ptr<RoutingPolicy>(std::make_unique<LeastLoadedPolicy>());
  if (name == "power_of_two") return std::unique_ptr<RoutingPolicy>(std::make_unique<PowerOfTwoPolicy>());
  if (name == "round_robin") return std::unique_ptr<RoutingPolicy>(std::make_unique<RoundRobinPolicy>());
  if (name == "session") return std::unique_ptr<RoutingPolicy>(std::make_unique<SessionPolicy>());
  if (name == "cache_aware") {
    // TODO(issue 13, cache_aware): plug in CacheAwarePolicy (cache_aware_policy.h,
    // KV-event index + approximate prefix tree) here once it is merged. Until
    // then cache_aware routes as least_loaded.
    return std::unique_ptr<RoutingPolicy>(std::make_unique<LeastLoadedPolicy>());
  }
  return InvalidArgument("unknown routing policy '" + std::string(name) + "'");
}

}  // namespace pagoda::gateway
