// SessionPolicy: sticky sessions. A request with a session key (the model's
// session header, else the body's `user` field) goes to the candidate with
// the best weighted rendezvous score for that key, so a replica that leaves
// moves only its own sessions and one that joins takes only its share.
// Without a key: least loaded. Stateless: any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "gateway/routing_policy.h"

namespace pagoda::gateway {

// 64-bit FNV-1a of key, '\0', replica id, then a final avalanche (splitmix64).
uint64_t RendezvousHash(std::string_view key, std::string_view replica_id);

class SessionPolicy final : public RoutingPolicy {
 public:
  std::string_view name() const override { return "session"; }
  RouteChoice Pick(const RouteInput& input, std::span<const ReplicaView> candidates) override;
};

}  // namespace pagoda::gateway
