// CacheAwarePolicy: the default routing policy. Each candidate's cost is
//   (prompt blocks it would compute) x overlap_weight x its weight
//   + its decode load (active_blocks) x decode_block_weight,
// Dynamo's KV router cost; the cheapest wins, ties go to fewer active
// requests, then to the lower rendezvous hash of (id, the prompt's last
// block hash): stable across processes, and new prefixes spread over idle
// replicas instead of all landing on one.
// The blocks a replica already holds come from the KvIndex for replicas with
// KV events, and from the approximate PrefixTree of what the gateway itself
// routed there for the others.
//
// Load guard (the "death spiral" of sglang#14305 and the lost locality of
// #32195): when the candidates' active requests are imbalanced (max - min >
// balance_abs_threshold AND max > balance_rel_threshold x min), only those
// with load <= min + balance_abs_threshold stay, and among them the longest
// cached prefix wins (then the cost). The Router hands over healthy
// candidates only, so imbalance is computed over healthy replicas.
//
// Pending prefixes: a replica's events arrive some milliseconds after the
// prefill that stores the blocks, so a burst of requests sharing a new
// prefix would otherwise be scattered over the pool before the first event
// lands. OnDispatched records the chosen event-fed replica's chain as
// pending; it counts as held (as much as the index or more) for pending_ttl,
// by which time the events have confirmed it in the index or the engine did
// not keep it.
//
// Thread safety: Pick and OnDispatched from any thread at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "gateway/kv_index.h"
#include "gateway/prefix_tree.h"
#include "gateway/routing_policy.h"

namespace pagoda::gateway {

struct CacheAwareOptions {
  // Cost of one prompt block to compute, in decode blocks (Dynamo's
  // overlap_score_weight; 1.0 there too). Higher favours locality over load.
  double overlap_weight = 1.0;
  // Cost of one KV block held by a running request, in prompt blocks. 1.0 is
  // Dynamo's cost; on CPU replicas a held block slows a decode step far less
  // than computing a prompt block costs, and with long agentic histories
  // (hundreds of blocks per running request) 1.0 moves a session off the
  // replica holding its prefix whenever another session runs there
  // (docs/GATEWAY_ROUTING.md, "Load weight"). Config: decode_load_weight.
  double decode_block_weight = 1.0;
  // Imbalance test over active requests; SGLang's defaults are 64 and 1.5,
  // sized for GPU servers running hundreds of sequences; 16 suits replicas
  // that run tens.
  int64_t balance_abs_threshold = 16;
  double balance_rel_threshold = 1.5;
  // How long a dispatched prefix counts as held on an event-fed replica
  // before events confirm it.
  std::chrono::milliseconds pending_ttl{10000};
  size_t tree_max_nodes = size_t{1} << 20;     // approximate tree budget (~120 MB)
  size_t pending_max_nodes = size_t{1} << 16;  // pending tree budget
  // Untokenized requests are matched on raw text in blocks of block_size x
  // this many bytes (about one token block at ~4 bytes per token).
  int text_bytes_per_token = 4;
  // Time source (tests); steady_clock::now when empty.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

class CacheAwarePolicy final : public RoutingPolicy {
 public:
  // `index`: the gateway's KvIndex (borrowed, outlives the policy); null when
  // no replica publishes events.
  explicit CacheAwarePolicy(const KvIndex* index, CacheAwareOptions options = {});
  // The same, sharing ownership of the index (the routing table's per-model
  // index, which outlives any one policy across reloads).
  static std::unique_ptr<CacheAwarePolicy> Sharing(std::shared_ptr<const KvIndex> index,
                                                   CacheAwareOptions options = {});
  ~CacheAwarePolicy() override;

  std::string_view name() const override { return "cache_aware"; }
  RouteChoice Pick(const RouteInput& input, std::span<const ReplicaView> candidates) override;
  void OnDispatched(const RouteInput& input, const ReplicaView& chosen) override;

  // Forgets a replica's approximate and pending entries (left the config).
  void RemoveReplica(std::string_view id) override;

  const PrefixTree& tree() const { return tree_; }

 private:
  struct Prompt;
  Prompt Chain(const RouteInput& input) const;
  std::chrono::steady_clock::time_point Now() const;

  std::shared_ptr<const KvIndex> owned_index_;  // null when borrowed
  const KvIndex* index_;
  CacheAwareOptions options_;
  PrefixTree tree_;     // replicas without events
  PrefixTree pending_;  // event-fed replicas, entries live pending_ttl
};

}  // namespace pagoda::gateway
