// KvIndex: which KV blocks each replica holds, as its KV events report them
// (BlockStored / BlockRemoved / AllBlocksCleared). Blocks are keyed by the
// gateway's own chained hashes (block_hasher.h), re-derived from the events'
// token ids, so they compare directly with a request's chain; the engine's
// own block hashes are opaque byte strings, kept only to resolve parents and
// removals. The event decoding lives elsewhere (src/kvevents); this class
// takes the already-decoded fields.
//
// Thread safety: every method may be called from any thread. One
// shared_mutex: routing reads (MatchedBlocks) take it shared; each event
// (one per call) takes it exclusive for the length of its blocks.
//
// Media (the events' `medium`: vLLM sends "GPU", its CPU offload "CPU";
// Pagoda's pool is "CPU", its offload tiers "DISK" and "REDIS"; see
// docs/KV_OFFLOAD.md): a block is held while any medium holds it; each
// event stores or removes it in its own medium only. A stored event whose
// blocks the replica already holds in another medium only adds the medium
// (an offload tier announces a block as it leaves the pool, and its root
// block's salt is not in the event). Options::medium_credit gives a lower
// tier's blocks less than a full block of credit in routing: restoring costs
// less than computing but more than reading memory. Unlisted media (and
// events without one) count as memory (credit 1).
//
// Memory: per held block about 150 bytes (the engine-hash -> gateway-hash
// map entry with its string, plus the held-set entry and bucket pointers),
// so 1M blocks is about 150 MB. Options::max_blocks_per_replica caps it: a
// replica whose events would exceed it (an engine that never sends its
// removals) has further stores dropped and counted, never grown without bound.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pagoda::gateway {

class KvIndex {
 public:
  struct Options {
    size_t max_blocks_per_replica = size_t{1} << 20;
    uint64_t salt = 0;  // seeds each root block's hash (block_hasher.h)
    // Credit of one block held only in a lower tier, by medium (matched
    // case-insensitively; at most kMaxLowerMedia entries are used).
    std::vector<std::pair<std::string, double>> medium_credit = {{"DISK", 0.9}, {"REDIS", 0.8}};
  };
  static constexpr size_t kMaxLowerMedia = 3;

  struct ReplicaStats {
    std::string replica;
    size_t blocks = 0;               // distinct gateway hashes held now
    int64_t stored = 0;              // blocks taken from BlockStored events
    int64_t removed = 0;             // blocks dropped by BlockRemoved events
    int64_t cleared = 0;             // AllBlocksCleared events
    int64_t orphans = 0;             // stored events whose parent was unknown (skipped)
    int64_t malformed = 0;           // stored events whose token ids did not fill the blocks (skipped)
    int64_t unknown_removed = 0;     // removals of blocks the index did not hold (in that medium)
    size_t lower_tier_only = 0;      // of `blocks`, those held only in a lower-tier medium now
    int64_t over_capacity = 0;       // blocks dropped at max_blocks_per_replica
    int block_size = 0;              // block size of the last stored event
    std::chrono::steady_clock::time_point last_update;  // last event of any kind
  };

  KvIndex();
  explicit KvIndex(Options options);
  ~KvIndex();
  KvIndex(const KvIndex&) = delete;
  KvIndex& operator=(const KvIndex&) = delete;

  // BlockStored: `engine_hashes[i]` names block i, whose tokens are
  // token_ids[i * block_size, (i + 1) * block_size); block 0's parent is
  // `parent_engine_hash` (none: a root block). A parent the index does not
  // know means the chain cannot be placed: the event is counted as an
  // orphan and skipped (guessing would put the blocks under a wrong prefix).
  // `scope_digest`: the cache scope the event's extra keys name (0: none);
  // a root block's chain starts at ScopedRoot(salt, scope_digest).
  // `medium`: the event's (nullopt or an unlisted name: memory).
  void OnStored(std::string_view replica, std::optional<std::string_view> parent_engine_hash,
                std::span<const std::string> engine_hashes, std::span<const int32_t> token_ids, int block_size,
                uint64_t scope_digest = 0, std::optional<std::string_view> medium = std::nullopt);
  void OnRemoved(std::string_view replica, std::span<const std::string> engine_hashes,
                 std::optional<std::string_view> medium = std::nullopt);
  void OnCleared(std::string_view replica);  // AllBlocksCleared: the replica holds nothing
  void RemoveReplica(std::string_view replica);  // forgets it and its stats

  // Number of LEADING blocks of `chain` (gateway hashes) that `replica` holds.
  size_t MatchedBlocks(std::string_view replica, std::span<const uint64_t> chain) const;
  // The same for each of `replicas` under one lock; out[i] for replicas[i].
  // `credit` (when not empty): credit[i] = the sum over those leading blocks
  // of the best credit among the media holding each (<= out[i]).
  void MatchedBlocks(std::span<const std::string_view> replicas, std::span<const uint64_t> chain,
                     std::span<size_t> out, std::span<double> credit = {}) const;

  uint64_t salt() const;  // the root seed requests must chain with

  std::optional<ReplicaStats> Stats(std::string_view replica) const;
  std::vector<ReplicaStats> AllStats() const;  // sorted by replica

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace pagoda::gateway
