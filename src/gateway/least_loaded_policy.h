// LeastLoadedPolicy: the replica with the lowest weighted load, where load is
// the gateway's own count of active requests (then active blocks on a tie)
// and `weight` (the replica's cost multiplier, raised during slow start)
// scales it. Ties go to the earlier candidate, so decisions are
// deterministic. Stateless: any thread.
#pragma once

#include "gateway/routing_policy.h"

namespace pagoda::gateway {

// Lower is better: (active_requests + 1) * weight, then active_blocks * weight.
bool LessLoaded(const ReplicaView& a, const ReplicaView& b);
size_t LeastLoadedIndex(std::span<const ReplicaView> candidates);

class LeastLoadedPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "least_loaded"; }
  RouteChoice Pick(const RouteInput& input, std::span<const ReplicaView> candidates) override;
};

}  // namespace pagoda::gateway
