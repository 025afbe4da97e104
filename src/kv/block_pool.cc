#include "kv/block_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

namespace pagoda::kv {
namespace {

constexpr int64_t kLine = 64;
constexpr int64_t kMaxBytes = int64_t{1} << 40;  // 1 TiB: anything larger is a unit mistake

int64_t RoundLine(int64_t n) { return (n + kLine - 1) / kLine * kLine; }

// Byte offsets of each layer's K and V regions (and scales) and the block
// size in bytes; 0 when invalid.
int64_t Layout(const BlockPoolOptions& o, std::vector<int64_t>* k_offset, std::vector<int64_t>* v_offset,
               std::vector<int64_t>* scale_offset = nullptr) {
  if (o.layers.empty() || o.block_size < 1 || o.block_size > (1 << 20)) return 0;
  const int64_t elem = kernels::KvTypeSize(o.type);
  int64_t off = 0;
  for (const KvLayerWidths& l : o.layers) {
    if (l.k < 1 || l.v < 0 || l.k > (int64_t{1} << 24) || l.v > (int64_t{1} << 24)) return 0;
    if (l.n_head_kv < 1 || l.k % l.n_head_kv != 0 || l.v % l.n_head_kv != 0) return 0;
    if (k_offset != nullptr) k_offset->push_back(off);
    off += RoundLine(l.k * o.block_size * elem);
    if (v_offset != nullptr) v_offset->push_back(off);
    off += RoundLine(l.v * o.block_size * elem);
    if (off > kMaxBytes) return 0;
  }
  if (kernels::KvTypeHasScales(o.type)) {
    const int64_t start = off;
    for (const KvLayerWidths& l : o.layers) {
      if (scale_offset != nullptr) scale_offset->push_back(off);
      // One byte per (K or V, head, position); a layer without V (MLA) has K's only.
      off += (l.v > 0 ? 2 : 1) * int64_t{l.n_head_kv} * o.block_size;
    }
    off = start + RoundLine(off - start);
  }
  return off;
}

}  // namespace

int64_t BlockPool::BlockBytes(const BlockPoolOptions& options) { return Layout(options, nullptr, nullptr); }

BlockRegions BlockPool::Regions(const BlockPoolOptions& options) {
  BlockRegions r;
  r.block_bytes = Layout(options, &r.k_offset, &r.v_offset, &r.scale_offset);
  if (r.block_bytes == 0) r = BlockRegions{};
  return r;
}

Result<std::unique_ptr<BlockPool>> BlockPool::Create(const BlockPoolOptions& options) {
  auto pool = std::unique_ptr<BlockPool>(new BlockPool());
  const int64_t block_bytes =
      Layout(options, &pool->k_offset_, &pool->v_offset_, &pool->scale_offset_);
  if (block_bytes == 0) {
    return InvalidArgument(
        "KV block pool: need at least one layer, positive K widths divisible by the KV heads and block size in "
        "[1, 2^20]");
  }
  if (options.memory_bytes < block_bytes) {
    return InvalidArgument("KV cache memory of " + std::to_string(options.memory_bytes) +
                           " bytes holds no block of " + std::to_string(block_bytes) + " bytes");
  }
  if (options.memory_bytes > kMaxBytes) {
    return ResourceExhausted("KV cache memory of " + std::to_string(options.memory_bytes >> 30) +
                             " GiB is too large");
  }
  const int64_t n = std::min<int64_t>(options.memory_bytes / block_bytes, std::numeric_limits<int32_t>::max() - 1);
  // Not zeroed: pages are touched only as blocks are written.
  void* mem = std::aligned_alloc(kLine, static_cast<size_t>(n * block_bytes));
  if (mem == nullptr) {
    return ResourceExhausted("cannot allocate KV cache of " + std::to_string((n * block_bytes) >> 20) + " MiB");
  }
  BlockPool& p = *pool;
  p.base_ = static_cast<char*>(mem);
  p.type_ = options.type;
  p.block_size_ = options.block_size;
  p.layers_ = options.layers;
  p.block_bytes_ = block_bytes;
  p.n_blocks_ = static_cast<int32_t>(n);
  p.ref_.assign(n, 0);
  p.cached_.assign(n, 0);
  p.tag_.assign(n, 0);
  p.free_.reserve(n);
  for (int64_t b = n - 1; b >= 0; --b) p.free_.push_back(static_cast<BlockId>(b));
  p.lru_prev_.assign(n + 1, static_cast<BlockId>(n));
  p.lru_next_.assign(n + 1, static_cast<BlockId>(n));
  return pool;
}

BlockPool::~BlockPool() { std::free(base_); }

void BlockPool::LruUnlink(BlockId b) {
  const BlockId prev = lru_prev_[b], next = lru_next_[b];
  lru_next_[prev] = next;
  lru_prev_[next] = prev;
  lru_prev_[b] = lru_next_[b] = n_blocks_;
  --n_cached_idle_;
}

void BlockPool::LruPushBack(BlockId b) {
  const BlockId tail = lru_prev_[n_blocks_];
  lru_next_[tail] = b;
  lru_prev_[b] = tail;
  lru_next_[b] = n_blocks_;
  lru_prev_[n_blocks_] = b;
  ++n_cached_idle_;
}

BlockId BlockPool::Allocate() {
  BlockId b = kNoBlock;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (n_cached_idle_ > 0) {
    b = lru_next_[n_blocks_];  // least recently released
    LruUnlink(b);
    cached_[b] = 0;
    if (reclaim_hook_) reclaim_hook_(b);
  } else {
    return kNoBlock;
  }
  PAGODA_CHECK(ref_[b] == 0);
  ref_[b] = 1;
  ++tag_[b];
  ++n_held_;
  return b;
}

void BlockPool::Acquire(BlockId b) {
  Checked(b);
  if (ref_[b] == 0) {
    PAGODA_CHECK(cached_[b]) << "Acquire of free block " << b << " (use Allocate)";
    LruUnlink(b);
    ++n_held_;
  }
  ++ref_[b];
}

void BlockPool::Release(BlockId b) {
  Checked(b);
  PAGODA_CHECK(ref_[b] > 0) << "Release of unreferenced block " << b;
  if (--ref_[b] > 0) return;
  --n_held_;
  if (cached_[b]) {
    LruPushBack(b);
  } else {
    free_.push_back(b);
  }
}

void BlockPool::SetCached(BlockId b, bool cached) {
  Checked(b);
  if ((cached_[b] != 0) == cached) return;
  PAGODA_CHECK(!cached || ref_[b] > 0) << "SetCached on free block " << b << ": only a held block can be registered";
  cached_[b] = cached ? 1 : 0;
  if (!cached && ref_[b] == 0) {  // an idle cached block becomes free
    LruUnlink(b);
    free_.push_back(b);
  }
}

std::vector<BlockId> BlockPool::LruOrder() const {
  std::vector<BlockId> out;
  for (BlockId b = lru_next_[n_blocks_]; b != n_blocks_; b = lru_next_[b]) out.push_back(b);
  return out;
}

}  // namespace pagoda::kv
