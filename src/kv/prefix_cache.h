// PrefixCache: automatic prefix caching over a BlockPool. A full, immutable
// block is registered under its chained BlockHash (kv/block_hash.h); a new
// sequence whose tokens start with registered blocks adopts them instead of
// recomputing them. Registered blocks that no sequence holds stay in the
// pool's LRU and are evicted only when the pool needs a block; eviction drops
// the hash. Only full blocks are shared, and they are never written again
// (the paged KV cache copies or unregisters a block before a rewrite), so no
// copy-on-write bookkeeping lives here.
// Events (stored / evicted, with the hash) go to one sink, synchronously on
// the engine thread: the sink must only enqueue (the gateway publishes them
// later). Counters follow vLLM's prefix_cache_queries / prefix_cache_hits,
// in tokens.
// Registers itself as the pool's reclaim hook; the pool must outlive it.
// Engine thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace pagoda::kv {

struct PrefixCacheEvent {
  enum class Kind : uint8_t { kStored, kEvicted };
  Kind kind = Kind::kStored;
  BlockHash hash;
  BlockHash parent;  // kStored: the previous block's hash (the root for a first block)
  bool first = false;  // kStored: the chain's first block (parent is the root, not a block)
  // kStored: the block's [block_size] tokens; valid only during the sink call.
  std::span<const int32_t> tokens;
};
using PrefixCacheEventSink = std::function<void(const PrefixCacheEvent&)>;

// A registered block the pool is about to reuse (its bytes still intact):
// what an offload tier needs to keep it (kv/disk_tier.h). `tokens` is valid
// only during the call.
struct EvictedBlock {
  BlockId block = kNoBlock;
  BlockHash hash;
  BlockHash parent;
  std::span<const int32_t> tokens;  // [block_size]
};
using PrefixCacheEvictHook = std::function<void(const EvictedBlock&)>;

struct PrefixCacheStats {
  int64_t tokens_queried = 0;  // prompt tokens looked up (vLLM prefix_cache_queries)
  int64_t tokens_hit = 0;      // of those, tokens served from cached blocks (prefix_cache_hits)
  int64_t blocks_stored = 0;
  int64_t blocks_evicted = 0;  // dropped by the pool needing room, or unregistered before a rewrite
};

class PrefixCache {
 public:
  explicit PrefixCache(BlockPool& pool, bool enabled = true);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  bool enabled() const { return enabled_; }
  int32_t block_size() const { return hasher_.block_size(); }
  BlockHasher& hasher() { return hasher_; }
  int32_t n_registered() const { return static_cast<int32_t>(by_hash_.size()); }
  const PrefixCacheStats& stats() const { return stats_; }
  void SetEventSink(PrefixCacheEventSink sink) { sink_ = std::move(sink); }
  // Called on the engine thread when the pool reclaims a registered idle
  // block, before its bytes are reused (not for Forget: a block about to be
  // rewritten is not a prefix anyone can return to). Must only copy.
  void SetEvictHook(PrefixCacheEvictHook hook) { evict_hook_ = std::move(hook); }

  // The longest run of registered blocks at the start of `tokens` (full
  // blocks only, at most max_blocks): appends their ids and hashes and
  // returns how many. Takes no reference and counts nothing. 0 when disabled.
  int32_t Lookup(std::span<const int32_t> tokens, std::string_view salt, int32_t max_blocks,
                 std::vector<BlockId>* blocks, std::vector<BlockHash>* hashes);
  // The block registered under `hash`, or kNoBlock.
  BlockId Find(const BlockHash& hash) const;
  // What an offload tier needs of registered block `block` (tokens: empty
  // when Store was not given them); false when it is not registered.
  bool Describe(BlockId block, EvictedBlock* out) const;
  // Adds one query to the counters (called once per admitted request).
  void RecordQuery(int64_t tokens_queried, int64_t tokens_hit) {
    stats_.tokens_queried += tokens_queried;
    stats_.tokens_hit += tokens_hit;
  }

  // Registers `block` (held, full, never written again) under `hash`. False
  // when disabled, or when another block already holds the hash (two
  // sequences computed the same prefix; the duplicate stays private).
  // `tokens` (the block's) and `first` only go to the event sink.
  bool Store(const BlockHash& hash, const BlockHash& parent, BlockId block, std::span<const int32_t> tokens = {},
             bool first = false);
  // Unregisters `block` if it is registered (it is about to be rewritten).
  void Forget(BlockId block);

 private:
  void Drop(BlockId block);  // erase the hash, count and report the eviction
  EvictedBlock Entry(BlockId block) const;  // block's hash, parent and tokens as stored

  BlockPool& pool_;
  bool enabled_;
  BlockHasher hasher_;
  std::unordered_map<BlockHash, BlockId, BlockHashHasher> by_hash_;
  std::vector<BlockHash> hash_of_;  // [n_blocks]; meaningful where pool_.cached(b)
  std::vector<BlockHash> parent_of_;  // [n_blocks]; likewise
  std::vector<int32_t> tokens_of_;    // [n_blocks * block_size]; likewise (when Store was given them)
  PrefixCacheStats stats_;
  PrefixCacheEventSink sink_;
  PrefixCacheEvictHook evict_hook_;
};

}  // namespace pagoda::kv
