// RoutingPolicy: picks one replica of a deployment for one request. The
// gateway's Router (router.h) filters the replicas first (healthy, circuit
// closed, zone rules, load threshold) and hands the policy the eligible ones;
// the policy only ranks them. Policies: cache_aware (default), least_loaded,
// power_of_two, round_robin, session. Thread safety: Pick and OnDispatched
// may be called from any I/O thread at once; implementations lock their own
// state.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace pagoda::gateway {

// One eligible replica as the policy sees it (a snapshot, valid during Pick).
struct ReplicaView {
  std::string_view id;    // stable replica id (its base URL unless named)
  std::string_view zone;  // zone label; "" when none
  double weight = 1.0;    // multiplies the prompt blocks it would compute
  int64_t active_requests = 0;  // dispatched and not yet ended (the gateway's own count)
  int64_t active_blocks = 0;    // KV blocks the gateway estimates its running requests hold
  bool kv_events = false;       // its cache view comes from KV events (else the approximate tree)
};

// What the policy may look at for one request.
struct RouteInput {
  std::string_view model;            // the deployment key ("name@version")
  std::span<const int32_t> tokens;   // the prompt exactly as the engine will see it; empty if not tokenized
  std::string_view prompt_text;      // the request's prompt text (approximate matching when untokenized)
  std::string_view session_key;      // sticky key (header or `user` field); "" when none
  int block_size = 16;               // the replicas' KV block size in tokens
  // XXH3-64 of the cache salt the replica will use for this request (the
  // tenant's cache scope); 0: unsalted. Chains start at ScopedRoot.
  uint64_t cache_scope_digest = 0;
};

struct RouteChoice {
  size_t index = 0;                  // into the candidates span
  int64_t predicted_cached_tokens = 0;  // the policy's prediction (metrics: predicted vs reported)
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual std::string_view name() const = 0;
  // `candidates` is never empty.
  virtual RouteChoice Pick(const RouteInput& input, std::span<const ReplicaView> candidates) = 0;
  // Called once the request was sent to `chosen` (approximate policies learn here).
  virtual void OnDispatched(const RouteInput& input, const ReplicaView& chosen) { (void)input, (void)chosen; }
  // The replica left the config (a reload): forget what was learned about it.
  virtual void RemoveReplica(std::string_view id) { (void)id; }
};

}  // namespace pagoda::gateway
