#include "gateway/power_of_two_policy.h"

#include "gateway/least_loaded_policy.h"

namespace pagoda::gateway {

RouteChoice PowerOfTwoPolicy::Pick(const RouteInput& input, std::span<const ReplicaView> candidates) {
  (void)input;
  if (candidates.size() == 1) return RouteChoice{0, 0};
  size_t a, b;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::uniform_int_distribution<size_t> first(0, candidates.size() - 1);
    std::uniform_int_distribution<size_t> second(0, candidates.size() - 2);
    a = first(rng_);
    b = second(rng_);
    if (b >= a) ++b;  // distinct from a
  }
  return RouteChoice{LessLoaded(candidates[b], candidates[a]) ? b : a, 0};
}

}  // namespace pagoda::gateway
