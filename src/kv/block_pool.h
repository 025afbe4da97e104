// BlockPool: the memory of a paged KV cache, one allocation cut into blocks
// of block_size positions, sized by a byte budget (--kv-cache-memory).
// A block holds every layer of its positions:
//   for each layer l: K [block_size, k_width(l)] then V [block_size, v_width(l)]
// elements of the pool's KvType, each region starting on a 64-byte line, so
// copying one block out (offload, transfer, copy-on-write) is one memcpy.
// A scaled type (fp8_e4m3, int8) adds one more region at the end of the
// block: its scales, one E8M0 byte per (layer, K or V, kv head, position)
//   for each layer l: K scales [n_head_kv(l)][block_size] then V scales
//   [n_head_kv(l)][block_size]
// (see docs/KV_CACHE.md); a position's write sets its own scales.
// Nothing outside the pool depends on the offsets.
//
// Block states:
//   held    ref_count > 0: in some sequence's block table
//   cached  ref_count == 0 but marked cached (a full block the prefix cache
//           can hand out again); kept in an LRU and reclaimed only when no
//           free block is left
//   free    ref_count == 0, nothing worth keeping
// Every time a block is handed out by Allocate its integrity tag is bumped,
// so a holder that remembers (id, tag) can tell that the block was recycled.
// Owned by the engine thread (through the paged KV cache); not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "kernels/cpu/ops.h"

namespace pagoda::kv {

using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

struct KvLayerWidths {
  int64_t k = 0;  // elements per position: n_head_kv * head_dim_k
  int64_t v = 0;  // 0: the layer stores no V (MLA latent)
  int32_t n_head_kv = 1;  // scale groups of a row (scaled types); divides k and v
};

struct BlockPoolOptions {
  std::vector<KvLayerWidths> layers;
  kernels::KvType type = kernels::KvType::kF16;
  int32_t block_size = 16;
  int64_t memory_bytes = 0;  // the pool gets memory_bytes / block_bytes blocks
};

// Where a block's regions lie (bytes from the block start), as a pool with
// these options lays them out: what a copy outside the pool (conversion of
// a block record to another KV type, kv/block_convert.h) reads and writes.
struct BlockRegions {
  std::vector<int64_t> k_offset;      // per layer
  std::vector<int64_t> v_offset;      // per layer
  std::vector<int64_t> scale_offset;  // per layer, scaled types only: K scales then V scales
  int64_t block_bytes = 0;            // 0: the options are invalid
};

class BlockPool {
 public:
  // Errors: InvalidArgument (bad widths or block size, budget below one
  // block), ResourceExhausted (allocation failed).
  static Result<std::unique_ptr<BlockPool>> Create(const BlockPoolOptions& options);
  // Bytes one block takes with these options (sizing a budget); 0 if invalid.
  static int64_t BlockBytes(const BlockPoolOptions& options);
  static BlockRegions Regions(const BlockPoolOptions& options);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  kernels::KvType type() const { return type_; }
  int32_t block_size() const { return block_size_; }
  int64_t block_bytes() const { return block_bytes_; }
  int n_layers() const { return static_cast<int>(layers_.size()); }
  const KvLayerWidths& layer(int l) const { return layers_[l]; }

  int32_t n_blocks() const { return n_blocks_; }
  int32_t n_held() const { return n_held_; }
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t n_cached_idle() const { return n_cached_idle_; }
  // What Allocate can still hand out: free plus reclaimable cached blocks.
  int32_t n_available() const { return n_blocks_ - n_held_; }
  // Held blocks / all blocks; cached-but-unreferenced blocks count as free (as vLLM's kv_cache_usage_perc).
  double usage() const { return static_cast<double>(n_held_) / n_blocks_; }

  // A block with ref_count 1 and a fresh integrity tag: a free block, else the
  // least recently released cached one (the reclaim hook is told first).
  // kNoBlock when every block is held.
  BlockId Allocate();
  // One more holder; a cached idle block leaves the LRU (a prefix-cache hit).
  void Acquire(BlockId b);
  // One holder less; at zero the block goes to the LRU's recent end if cached,
  // else to the free list.
  void Release(BlockId b);
  // Whether the block's contents are worth keeping once unreferenced (the
  // prefix cache registered it). Clearing it on an idle block frees it.
  void SetCached(BlockId b, bool cached);
  // Called with a cached idle block when Allocate takes it back, before it is
  // reused (the prefix cache drops its hash). One hook; empty to clear.
  void SetReclaimHook(std::function<void(BlockId)> hook) { reclaim_hook_ = std::move(hook); }

  int32_t ref_count(BlockId b) const { return ref_[Checked(b)]; }
  bool cached(BlockId b) const { return cached_[Checked(b)] != 0; }
  uint32_t integrity_tag(BlockId b) const { return tag_[Checked(b)]; }
  // All tags and ref counts, indexed by block id: the batched integrity check
  // (kv/integrity_tracker.h) reads them without a bounds check per block.
  std::span<const uint32_t> integrity_tags() const { return tag_; }
  std::span<const int32_t> ref_counts() const { return ref_; }
  // Tests only: bumps a held block's tag behind its holders' backs (the
  // "retagged" fault the integrity check must catch).
  void RetagForTesting(BlockId b) { ++tag_[Checked(b)]; }
  // Cached idle blocks, least recently released first (tests, offload later).
  std::vector<BlockId> LruOrder() const;

  // Block memory: the whole block, and layer l's K / V region
  // ([block_size, width] elements of type()).
  void* data(BlockId b) { return base_ + Checked(b) * block_bytes_; }
  const void* data(BlockId b) const { return base_ + Checked(b) * block_bytes_; }
  void* k(BlockId b, int l) { return base_ + Checked(b) * block_bytes_ + k_offset_[l]; }
  void* v(BlockId b, int l) { return base_ + Checked(b) * block_bytes_ + v_offset_[l]; }
  // Scaled types: layer l's K / V scale bytes of the block, [n_head_kv][block_size].
  uint8_t* k_scales(BlockId b, int l) { return ScalesAt(b, l, 0); }
  // (A layer without V has no V scales: its v_scales are its K scales.)
  uint8_t* v_scales(BlockId b, int l) {
    return ScalesAt(b, l, layers_[l].v > 0 ? int64_t{layers_[l].n_head_kv} * block_size_ : 0);
  }

 private:
  BlockPool() = default;
  int64_t Checked(BlockId b) const {
    PAGODA_CHECK(b >= 0 && b < n_blocks_) << "block id " << b << " outside [0, " << n_blocks_ << ")";
    return b;
  }
  uint8_t* ScalesAt(BlockId b, int l, int64_t extra) {
    PAGODA_CHECK(kernels::KvTypeHasScales(type_)) << "scales of an unscaled KV type";
    return reinterpret_cast<uint8_t*>(base_ + Checked(b) * block_bytes_ + scale_offset_[l]) + extra;
  }
  void LruUnlink(BlockId b);
  void LruPushBack(BlockId b);

  kernels::KvType type_ = kernels::KvType::kF16;
  int32_t block_size_ = 0;
  std::vector<KvLayerWidths> layers_;
  std::vector<int64_t> k_offset_;  // bytes from the block start, per layer
  std::vector<int64_t> v_offset_;
  std::vector<int64_t> scale_offset_;  // scaled types: layer l's K scales, in bytes
  int64_t block_bytes_ = 0;
  int32_t n_blocks_ = 0;
  char* base_ = nullptr;  // owned: aligned_alloc, freed in the destructor

  std::vector<int32_t> ref_;
  std::vector<uint8_t> cached_;
  std::vector<uint32_t> tag_;
  std::vector<BlockId> free_;  // a stack: the most recently freed block is reused first
  // Doubly linked LRU of cached idle blocks over ids; index n_blocks_ is the sentinel.
  std::vector<BlockId> lru_prev_;
  std::vector<BlockId> lru_next_;
  int32_t n_held_ = 0;
  int32_t n_cached_idle_ = 0;
  std::function<void(BlockId)> reclaim_hook_;
};

}  // namespace pagoda::kv
