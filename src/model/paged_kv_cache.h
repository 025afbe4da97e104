// PagedKvCache: the KvCache over a kv::BlockPool. Each sequence has a block
// table; View() hands the attention kernel the sequence's blocks as a KvView
// block list, and Prepare() takes blocks from the pool as positions grow
// (ResourceExhausted when none is left, so the scheduler can preempt).
// With prefix caching on, full blocks are registered in a kv::PrefixCache
// after each step (CommitBlocks) and a new sequence adopts the longest cached
// full-block prefix of its prompt (AdoptPrefix), skipping that computation.
// Shared blocks are full and never written: a rewrite of one (Truncate into a
// cached block, then Prepare) gets a private copy first.
// Owns the pool and the prefix cache. Engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/block_pool.h"
#include "kv/block_table.h"
#include "kv/disk_tier.h"
#include "kv/block_sink.h"
#include "kv/kv_tier.h"
#include "kv/memory_tier.h"
#include "kv/tier_event.h"
#include "kv/tier_loader.h"
#include "kv/integrity_tracker.h"
#include "kv/prefix_cache.h"
#include "model/kv_cache.h"

namespace pagoda {

struct PagedKvCacheOptions {
  int32_t n_seq_max = 1;        // sequence ids in [0, n_seq_max)
  int32_t n_ctx = 4096;         // positions one sequence may reach
  int64_t memory_bytes = 0;     // pool budget (--kv-cache-memory)
  int32_t block_size = 16;
  KvType type = KvType::kF16;
  bool prefix_caching = true;
  // Page integrity tracking (kv/integrity_tracker.h): off is a no-op.
  kv::IntegrityMode integrity = kv::IntegrityMode::kCheck;
  // Local-disk offload tier (kv/disk_tier.h, docs/KV_OFFLOAD.md): prefix
  // blocks the pool evicts are written under offload_dir (at most
  // offload_disk_bytes) and restored when a prompt's prefix continues into
  // them. Empty: no tier. Needs prefix_caching. model_fingerprint keeps
  // another model's blocks (or another --decode-weights) out.
  std::string offload_dir;
  int64_t offload_disk_bytes = 0;
  // Shared tier (kv/redis_tier.h): evicted blocks also go to this Redis
  // (redis://...), where every replica of the model finds them. Empty: none.
  std::string offload_redis_url;
  int64_t offload_redis_ttl_ms = 24 * 3'600'000;
  // Host-memory tier (kv/memory_tier.h), searched first: evicted blocks,
  // and the blocks a prefill replica transfers here. 0: none.
  int64_t offload_memory_bytes = 0;
  uint64_t model_fingerprint = 0;
};

// Offload counters of the cache (what /metrics reports per tier).
struct KvOffloadStats {
  int64_t restored_blocks = 0;   // blocks read back from the tiers into the pool
  int64_t restored_tokens = 0;
  int64_t restore_failures = 0;  // blocks found but refused (checksum, mismatch): recomputed
  int64_t offered_blocks = 0;    // evicted blocks handed to a tier (counted once per tier)
  std::vector<int64_t> tier_restored_tokens;  // per tier, as tiers() lists them
};

// Faults InjectFaultForTesting plants (tests only; nothing else reaches them).
enum class KvFault : uint8_t {
  kReuse,  // a block of the sequence is freed behind its back and handed out again
  kRetag,  // a block of the sequence gets a new tag behind the allocator's back
  kSwap,   // a block table entry is swapped with one of another sequence
};

class PagedKvCache final : public KvCache {
 public:
  static Result<std::unique_ptr<PagedKvCache>> Create(const KvCacheSpec& spec,
                                                      const PagedKvCacheOptions& options);
  // Bytes one block of `spec` takes (sizing memory_bytes); 0 if the spec is invalid.
  static int64_t BlockBytes(const KvCacheSpec& spec, KvType type, int32_t block_size);

  const KvCacheSpec& spec() const override { return spec_; }
  KvType type() const override { return pool_->type(); }
  int32_t n_seq_max() const override { return static_cast<int32_t>(seqs_.size()); }
  // Positions a new sequence could reach with the blocks available now.
  int32_t capacity() const override;
  int32_t SequenceLength(int32_t seq) const override;
  Status Prepare(const Batch& batch) override;
  void WriteK(int layer, int32_t seq, int32_t pos, const float* row) override;
  void WriteV(int layer, int32_t seq, int32_t pos, const float* row) override;
  kernels::KvView View(int layer, int32_t seq) const override;
  // Releases the blocks past n_pos, tail first, so a finished sequence's last
  // blocks are the first the LRU evicts (a prefix's head outlives its tail).
  void Truncate(int32_t seq, int32_t n_pos) override;

  // For the scheduler. `tokens` are the sequence's tokens from position 0
  // (prompt, then generated); `salt` isolates tenants (cache_salt) and must be
  // the same for AdoptPrefix and every CommitBlocks of a sequence.
  //
  // Attaches the cached blocks of the longest cached full-block prefix of
  // `tokens` to the empty sequence `seq` and returns the positions they cover:
  // the engine computes tokens from there on. At most
  // (tokens.size() - 1) rounded down to a block, so the last prompt token is
  // always computed and yields logits. Counts one prefix-cache query.
  // With offload tiers, the prefix continues with the blocks the loader
  // staged for `prefetch_key` (PrefetchPrefix), or, without a key, blocks
  // read back here (synchronously; checksum verified; a block that fails is dropped and
  // computed instead), registered in the prefix cache like computed ones,
  // while more than keep_available blocks stay available (the scheduler's
  // planned chunks need those).
  int32_t AdoptPrefix(int32_t seq, std::span<const int32_t> tokens, std::string_view salt,
                      int32_t keep_available = 0, uint64_t prefetch_key = 0);
  // Registers the sequence's newly filled full blocks (those covered by both
  // its KV length and `tokens`) in the prefix cache; returns how many were
  // newly registered. Call after each step.
  int32_t CommitBlocks(int32_t seq, std::span<const int32_t> tokens, std::string_view salt);
  // Blocks Prepare would take for `seq` to hold n_pos positions.
  int32_t BlocksToGrow(int32_t seq, int32_t n_pos) const;

  int32_t block_size() const { return pool_->block_size(); }
  int32_t n_ctx() const { return n_ctx_; }
  // Held blocks / all blocks (vLLM kv_cache_usage_perc).
  double usage() const { return pool_->usage(); }
  const kv::BlockPool& pool() const { return *pool_; }
  kv::PrefixCache& prefix_cache() { return *prefix_; }
  // The disk tier, or null.
  const kv::DiskTier* disk_tier() const { return disk_.get(); }
  kv::DiskTier* disk_tier() { return disk_.get(); }
  // The memory tier, or null (thread-safe itself: the KV transfer receiver
  // inserts into it from its own threads).
  kv::MemoryTier* memory_tier() const { return memory_.get(); }
  // Every offload tier, searched in this order: memory, disk, then Redis.
  const std::vector<kv::KvTier*>& tiers() const { return tiers_; }
  // What a record of one of this cache's blocks says about it (the tiers'
  // layout; model_fingerprint as the options gave it).
  const kv::BlockLayout& block_layout() const { return layout_; }
  // Hands the sequence's registered (CommitBlocks) or adopted blocks from
  // index `from` on to `sink`, in chain order, as far as full blocks of
  // `tokens` reach; returns the index after the last one handed. `salt` as
  // CommitBlocks had it.
  int32_t ExportBlocks(int32_t seq, int32_t from, std::span<const int32_t> tokens, std::string_view salt,
                       kv::BlockSink& sink);
  const KvOffloadStats& offload_stats() const { return offload_stats_; }
  // Loading a prefix from the offload tiers ahead of admission (a loader
  // thread, kv/tier_loader.h): kNotNeeded when no tier holds the block after
  // those the pool holds (admit now), kPending while the loader reads,
  // kReady when AdoptPrefix(..., prefetch_key = key) will take its blocks.
  // `key` names the waiting request (unique while it waits).
  enum class PrefetchState { kNotNeeded, kPending, kReady };
  PrefetchState PrefetchPrefix(uint64_t key, std::span<const int32_t> tokens, std::string_view salt);
  void CancelPrefetch(uint64_t key);
  bool prefetch_pending() const { return loader_ && loader_->pending() > 0; }
  // Prefetches not yet taken by AdoptPrefix (pending or ready).
  bool prefetch_outstanding() const { return loader_ && loader_->outstanding() > 0; }
  const kv::TierLoader* tier_loader() const { return loader_.get(); }
  // Told of every block an offload tier takes (kv/tier_event.h); the engine
  // turns them into KV events. Removals come through DrainTierEvents.
  void SetTierEventSink(kv::TierEventSink sink) { tier_sink_ = std::move(sink); }
  // Hands the blocks the tiers dropped since the last call to the sink (the
  // engine calls it before each batch of KV events goes out).
  void DrainTierEvents();
  // Hands the sink a stored event for each block the tiers found when they
  // opened (a restarted replica's disk tier) that chains up, block by block
  // through blocks also found, to the unsalted root: parents before
  // children, so a router rebuilds the chains. Blocks of salted chains
  // (their salt is not on disk) or whose ancestors are gone stay unannounced
  // and are still found by requests. Returns how many were announced.
  int64_t AnnounceOpenedBlocks();
  // Hands every registered block not yet on disk to the disk tier, waiting
  // for room in its queue (shutdown); returns how many. 0 without a tier.
  int32_t OffloadCachedBlocks();
  const kv::PrefixCache& prefix_cache() const { return *prefix_; }
  const kv::BlockTable& block_table(int32_t seq) const { return seqs_[CheckedSeq(seq)].table; }

  // Page integrity (paged_kv_cache_integrity.cc). The batched check of the
  // sequences a step is about to run; appends one failure per bad sequence
  // (nothing when the tracker is off).
  kv::IntegrityMode integrity_mode() const { return integrity_->mode(); }
  void CheckIntegrity(std::span<const int32_t> seqs, std::vector<kv::IntegrityFailure>* failures) const;
  // Empties a sequence that failed the check: releases only the blocks it
  // provably still holds (by its record, not its possibly corrupt table),
  // and unregisters them from the prefix cache, since their contents are in
  // doubt. Blocks whose ownership is in doubt stay held (quarantined).
  void DiscardCorrupt(int32_t seq);
  // Tests only: plants `kind` in sequence `seq` (kSwap: with sequence
  // `other`). FailedPrecondition when the sequence holds no suitable block.
  Status InjectFaultForTesting(KvFault kind, int32_t seq, int32_t other = -1);

 private:
  struct Sequence {
    int32_t length = 0;
    kv::BlockTable table;
    // Per layer, the table as K / V region pointers: what View() hands out.
    std::vector<std::vector<const void*>> k_blocks;
    std::vector<std::vector<const void*>> v_blocks;
    // Scaled types: per layer, each block's K / V scale bytes ([n_head_kv][block_size]).
    std::vector<std::vector<const uint8_t*>> k_scales;
    std::vector<std::vector<const uint8_t*>> v_scales;
    // Hashes of the leading blocks registered or adopted, in order.
    std::vector<kv::BlockHash> hashes;
  };

  PagedKvCache() = default;
  int32_t CheckedSeq(int32_t seq) const {
    PAGODA_CHECK(seq >= 0 && seq < n_seq_max()) << "sequence id " << seq;
    return seq;
  }
  void AppendBlock(Sequence& s, kv::BlockId b);
  void ReplaceBlock(Sequence& s, int32_t i, kv::BlockId b);
  void Write(bool is_k, int layer, int32_t seq, int32_t pos, const float* row);
  // Table entry i and its view pointers, without telling the integrity tracker.
  void SetEntry(Sequence& s, int32_t i, kv::BlockId b, uint32_t tag);
  int32_t SeqId(const Sequence& s) const { return static_cast<int32_t>(&s - seqs_.data()); }
  // Makes the blocks a batch rewrites private and unregistered; needs the
  // blocks counted by Prepare to be available.
  void PrivatizeRewrites();
  // Blocks [k, max_blocks) of `tokens` from the tiers, while found.
  // Offers one registered block to every tier (the evict hook and
  // OffloadCachedBlocks); `wait`: flush the queue when it is full.
  bool Offload(const kv::EvictedBlock& e, bool wait);
  int32_t RestoreFromTiers(Sequence& s, std::span<const int32_t> tokens, std::string_view salt, int32_t k,
                          int32_t max_blocks, int32_t keep_available);
  // Blocks of `staged` continuing s's chain, copied into pool blocks while
  // more than keep_available stay available (at most up to max_blocks).
  int32_t RestoreStaged(Sequence& s, std::vector<kv::StagedBlock>& staged, std::span<const int32_t> tokens,
                        std::string_view salt, int32_t max_blocks, int32_t keep_available);
  int32_t MaxAdoptBlocks(size_t n_tokens) const;

  KvCacheSpec spec_;
  int32_t n_ctx_ = 0;
  std::unique_ptr<kv::BlockPool> pool_;
  std::unique_ptr<kv::PrefixCache> prefix_;
  kv::BlockLayout layout_;
  std::unique_ptr<kv::MemoryTier> memory_;
  std::unique_ptr<kv::DiskTier> disk_;
  std::unique_ptr<kv::KvTier> redis_;
  std::vector<kv::KvTier*> tiers_;
  KvOffloadStats offload_stats_;
  kv::TierEventSink tier_sink_;
  std::vector<kv::BlockHash> tier_removed_;  // DrainTierEvents' scratch
  std::unique_ptr<kv::TierLoader> loader_;  // declared after the tiers it reads: destroyed first
  std::vector<Sequence> seqs_;
  std::unique_ptr<kv::IntegrityTracker> integrity_;
  std::vector<const kv::BlockTable*> tables_;  // [n_seq_max]: &seqs_[i].table, for the check
  std::vector<kv::BlockId> testing_strays_;    // blocks a kReuse fault handed to nobody's table
  // Prepare scratch.
  std::vector<int32_t> new_length_;
  std::vector<std::pair<int32_t, int32_t>> rewrites_;  // (seq, block index) in an immutable block
  std::vector<kv::BlockId> adopt_blocks_;
  std::vector<kv::BlockHash> adopt_hashes_;
};

}  // namespace pagoda
