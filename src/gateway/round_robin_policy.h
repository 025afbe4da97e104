// RoundRobinPolicy: candidates in turn, ignoring load and weight (the
// baseline the benchmarks compare against). Any thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "gateway/routing_policy.h"

namespace pagoda::gateway {

class RoundRobinPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "round_robin"; }
  RouteChoice Pick(const RouteInput& input, std::span<const ReplicaView> candidates) override;

 private:
  std::atomic<uint64_t> next_{0};
};

}  // namespace pagoda::gateway
