#include "gateway/round_robin_policy.h"

namespace pagoda::gateway {

RouteChoice RoundRobinPolicy::Pick(const RouteInput& input, std::span<const ReplicaView> candidates) {
  (void)input;
  return RouteChoice{static_cast<size_t>(next_.fetch_add(1) % candidates.size()), 0};
}

}  // namespace pagoda::gateway
