// PrefixTree: the approximate cache view for replicas that publish no KV
// events (external vLLM/SGLang servers without --kv-events-config, or any
// upstream before its first event): which prefixes the gateway itself sent
// to which replica, in the manner of SGLang's cache_aware router, but over
// chained block hashes (block_hasher.h) of the request's tokens, or of its
// raw text when the request could not be tokenized. Because a chained hash
// names its whole prefix, the tree's nodes are stored flat, one per hash,
// each tagged with the replicas sent that prefix and when. The policy also
// keeps a second, short-lived tree of "pending" prefixes for event-fed
// replicas (cache_aware_policy.h).
//
// Entries are (prefix, replica): two models served by one replica share its
// entries, as they share the replica's cache.
//
// Bounded: at most max_nodes hashes; past that the least recently inserted
// are evicted (a chain is touched tail first, so a prefix's head outlives its
// tail and a partly evicted chain still matches its head). About 120 bytes
// per node plus 16 per extra replica tag.
//
// Thread safety: any thread; Match takes a shared lock, Insert and
// RemoveReplica an exclusive one.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace pagoda::gateway {

class PrefixTree {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PrefixTree(size_t max_nodes = size_t{1} << 20);
  ~PrefixTree();
  PrefixTree(const PrefixTree&) = delete;
  PrefixTree& operator=(const PrefixTree&) = delete;

  // `replica` was sent the prefix `chain` (all of its blocks) at `now`.
  void Insert(std::span<const uint64_t> chain, std::string_view replica, Clock::time_point now);

  // out[i] = number of leading blocks of `chain` that replicas[i] was sent
  // no longer than `max_age` before `now`.
  void Match(std::span<const uint64_t> chain, std::span<const std::string_view> replicas, std::span<size_t> out,
             Clock::time_point now, Clock::duration max_age = Clock::duration::max()) const;

  void RemoveReplica(std::string_view replica);

  size_t size() const;        // nodes held
  int64_t evictions() const;  // nodes evicted at the budget

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace pagoda::gateway
