// PowerOfTwoPolicy: two distinct candidates drawn at random, the less loaded
// of them wins (LessLoaded). Seeded, so a test run is reproducible. Any
// thread (the generator is locked).
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

#include "gateway/routing_policy.h"

namespace pagoda::gateway {

class PowerOfTwoPolicy final : public RoutingPolicy {
 public:
  explicit PowerOfTwoPolicy(uint64_t seed = std::random_device{}()) : rng_(seed) {}
  std::string_view name() const override { return "power_of_two"; }
  RouteChoice Pick(const RouteInput& input, std::span<const ReplicaView> candidates) override;

 private:
  std::mutex mu_;
  std::mt19937_64 rng_;  // guarded by mu_
};

}  // namespace pagoda::gateway
