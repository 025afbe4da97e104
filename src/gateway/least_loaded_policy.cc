#include "gateway/least_loaded_policy.h"

namespace pagoda::gateway {

bool LessLoaded(const ReplicaView& a, const ReplicaView& b) {
  const double la = static_cast<double>(a.active_requests + 1) * a.weight;
  const double lb = static_cast<double>(b.active_requests + 1) * b.weight;
  if (la != lb) return la < lb;
  return static_cast<double>(a.active_blocks) * a.weight < static_cast<double>(b.active_blocks) * b.weight;
}

size_t LeastLoadedIndex(std::span<const ReplicaView> candidates) {
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (LessLoaded(candidates[i], candidates[best])) best = i;
  }
  return best;
}

RouteChoice LeastLoadedPolicy::Pick(const RouteInput& input, std::span<const ReplicaView> candidates) {
  (void)input;
  return RouteChoice{LeastLoadedIndex(candidates), 0};
}

}  // namespace pagoda::gateway
