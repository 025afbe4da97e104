#include "gateway/session_policy.h"

#include <cmath>
#include <limits>

#include "gateway/least_loaded_policy.h"

namespace pagoda::gateway {

uint64_t RendezvousHash(std::string_view key, std::string_view replica_id) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (unsigned char c : key) mix(c);
  mix(0);
  for (unsigned char c : replica_id) mix(c);
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

RouteChoice SessionPolicy::Pick(const RouteInput& input, std::span<const ReplicaView> candidates) {
  if (input.session_key.empty()) return RouteChoice{LeastLoadedIndex(candidates), 0};
  // Weighted rendezvous: score = -ln(u) * weight, the lowest wins; a
  // replica's share of keys is proportional to 1 / weight.
  size_t best = 0;
  double best_score = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < candidates.size(); ++i) {
    const uint64_t h = RendezvousHash(input.session_key, candidates[i].id);
    const double u = (static_cast<double>(h >> 11) + 0.5) / 9007199254740992.0;  // (0, 1)
    const double score = -std::log(u) * candidates[i].weight;
    if (score < best_score) {
      best_score = score;
      best = i;
    }
  }
  return RouteChoice{best, 0};
}

}  // namespace pagoda::gateway
