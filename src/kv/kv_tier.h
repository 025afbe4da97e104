// KvTier: one offload tier of the KV cache below the in-memory pool (tier
// 0). Full prefix-cache blocks the pool evicts are put here and come back
// when a request's prefix chain reaches them (docs/KV_OFFLOAD.md). Every
// tier stores the same self-checked record (kv/block_file.h), so a block
// that fails verification is refused, never served. Implementations:
// DiskTier (local files), RedisTier (shared by replicas).
//
// Put is called on the engine thread and only copies the block into the
// tier's bounded write-behind queue (kv/write_behind_queue.h); Contains and
// Get may be called from any thread. Implementations are thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/block_file.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace pagoda::kv {

// Counters since the tier opened, and its state now. What "stored" means is
// the tier's: see each tier's header.
struct KvTierStats {
  int64_t blocks = 0;          // blocks stored now
  int64_t bytes = 0;           // their total size (records)
  int64_t queued = 0;          // write-back queue depth now
  int64_t writes = 0;          // blocks written
  int64_t write_bytes = 0;
  int64_t dropped = 0;         // blocks not written (queue full, already stored, tier unavailable)
  int64_t deleted = 0;         // blocks removed by the tier's size bound
  int64_t hits = 0;            // Get calls that returned a block
  int64_t misses = 0;          // Get calls for a hash not stored (or not reachable)
  int64_t corrupt = 0;         // records refused (checksum, header, layout) and deleted
  int64_t read_bytes = 0;      // bytes read by successful Gets
  double read_seconds = 0;     // time those Gets took
  double write_seconds = 0;    // time the writer spent writing
};

// Whether `layout` is one a BlockPool has (block_bytes as BlockPool::BlockBytes
// computes it): what every tier's Open checks.
inline bool TierLayoutValid(const BlockLayout& layout) {
  BlockPoolOptions po;
  po.layers = layout.layers;
  po.type = layout.type;
  po.block_size = layout.block_size;
  return layout.block_bytes > 0 && BlockPool::BlockBytes(po) == layout.block_bytes;
}

class KvTier;

// Index of the first of `tiers` that holds `hash`; tiers.size() when none.
inline size_t FirstTierHolding(std::span<KvTier* const> tiers, const BlockHash& hash);

// Whether `rec` is the block `tokens` continuing `parent`: a record found
// under a hash must also name the same chain (a collision or a stray record
// must not hand another prefix's KV to this one).
inline bool RecordContinues(const BlockRecord& rec, const BlockHash& parent, std::span<const int32_t> tokens) {
  return rec.parent == parent && std::equal(tokens.begin(), tokens.end(), rec.tokens.begin(), rec.tokens.end());
}

class KvTier {
 public:
  virtual ~KvTier() = default;

  // "disk", "redis": for logs and metrics.
  virtual std::string_view name() const = 0;
  virtual const BlockLayout& layout() const = 0;
  // Queues a copy of the block (`payload` [layout.block_bytes], `tokens`
  // [block_size]). False when it was not queued (queue full, already
  // stored or queued, tier unavailable); the tier counts it in `dropped`.
  virtual bool Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
                   const void* payload) = 0;
  // Whether a Get of `hash` is expected to succeed (queued blocks count).
  virtual bool Contains(const BlockHash& hash) const = 0;
  // Reads the block into `payload` ([layout.block_bytes]) and returns its
  // record; `payload` is untouched on any error. NotFound when not stored;
  // DataLoss / FailedPrecondition / InvalidArgument when its record does not
  // verify (the tier deletes it); IoError when the tier cannot be read.
  virtual Result<BlockRecord> Get(const BlockHash& hash, void* payload) = 0;
  // Blocks until every queued block is written or given up (tests, shutdown).
  virtual void Flush() = 0;
  virtual KvTierStats stats() const = 0;
  // A hint that Get(hash) follows soon: the disk tier starts reading the
  // file ahead (posix_fadvise WILLNEED), so a chain's reads overlap.
  virtual void WillNeed(const BlockHash& hash) { (void)hash; }
  // Appends the blocks the tier dropped since the last call (size bound,
  // failed verification, failed write), for KV events; at most a bounded
  // backlog is kept between calls. Tiers that cannot tell (Redis evicts on
  // its own) report nothing.
  virtual void TakeRemoved(std::vector<BlockHash>* out) { (void)out; }
  // Appends the records (hash, parent, tokens) of the blocks the tier found
  // when it opened, once (later calls append nothing), so a restarted
  // replica can announce them in KV events. Tiers without a startup scan
  // (Redis is shared and evicts on its own) report nothing.
  virtual void TakeOpened(std::vector<BlockRecord>* out) { (void)out; }
};

inline size_t FirstTierHolding(std::span<KvTier* const> tiers, const BlockHash& hash) {
  size_t t = 0;
  while (t < tiers.size() && !tiers[t]->Contains(hash)) ++t;
  return t;
}

}  // namespace pagoda::kv
