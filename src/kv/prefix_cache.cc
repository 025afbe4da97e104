#include "kv/prefix_cache.h"

#include <algorithm>

namespace pagoda::kv {

PrefixCache::PrefixCache(BlockPool& pool, bool enabled)
    : pool_(pool),
      enabled_(enabled),
      hasher_(pool.block_size()),
      hash_of_(pool.n_blocks()),
      parent_of_(pool.n_blocks()),
      tokens_of_(static_cast<size_t>(pool.n_blocks()) * static_cast<size_t>(pool.block_size())) {
  pool_.SetReclaimHook([this](BlockId b) {
    // (The pool has already cleared the block's cached flag.)
    if (evict_hook_) evict_hook_(Entry(b));
    Drop(b);
  });
}

PrefixCache::~PrefixCache() { pool_.SetReclaimHook(nullptr); }

int32_t PrefixCache::Lookup(std::span<const int32_t> tokens, std::string_view salt, int32_t max_blocks,
                            std::vector<BlockId>* blocks, std::vector<BlockHash>* hashes) {
  if (!enabled_ || by_hash_.empty()) return 0;
  const int32_t bs = block_size();
  const int64_t n_full = std::min<int64_t>(static_cast<int64_t>(tokens.size()) / bs, max_blocks);
  BlockHash parent = hasher_.Root(salt);
  int32_t n = 0;
  for (; n < n_full; ++n) {
    const BlockHash h = hasher_.Next(parent, tokens.subspan(static_cast<size_t>(n) * bs, bs));
    const BlockId b = Find(h);
    if (b == kNoBlock) break;
    blocks->push_back(b);
    hashes->push_back(h);
    parent = h;
  }
  return n;
}

BlockId PrefixCache::Find(const BlockHash& hash) const {
  auto it = by_hash_.find(hash);
  return it == by_hash_.end() ? kNoBlock : it->second;
}

EvictedBlock PrefixCache::Entry(BlockId block) const {
  const size_t bs = static_cast<size_t>(hasher_.block_size());
  return EvictedBlock{block, hash_of_[block], parent_of_[block],
                      std::span<const int32_t>(tokens_of_).subspan(static_cast<size_t>(block) * bs, bs)};
}

bool PrefixCache::Describe(BlockId block, EvictedBlock* out) const {
  if (block < 0 || block >= pool_.n_blocks() || !pool_.cached(block)) return false;
  *out = Entry(block);
  return true;
}

bool PrefixCache::Store(const BlockHash& hash, const BlockHash& parent, BlockId block,
                        std::span<const int32_t> tokens, bool first) {
  if (!enabled_) return false;
  PAGODA_CHECK(pool_.ref_count(block) > 0) << "only a held block can be registered";
  if (pool_.cached(block)) {
    PAGODA_CHECK(hash_of_[block] == hash) << "block " << block << " is already registered under another hash";
    return false;
  }
  if (!by_hash_.emplace(hash, block).second) return false;
  hash_of_[block] = hash;
  parent_of_[block] = parent;
  if (tokens.size() == static_cast<size_t>(block_size())) {
    std::copy(tokens.begin(), tokens.end(), tokens_of_.begin() + static_cast<ptrdiff_t>(block) * block_size());
  }
  pool_.SetCached(block, true);
  ++stats_.blocks_stored;
  if (sink_) sink_(PrefixCacheEvent{PrefixCacheEvent::Kind::kStored, hash, parent, first, tokens});
  return true;
}

void PrefixCache::Forget(BlockId block) {
  if (!pool_.cached(block)) return;
  Drop(block);
  pool_.SetCached(block, false);
}

void PrefixCache::Drop(BlockId block) {
  const BlockHash h = hash_of_[block];
  auto it = by_hash_.find(h);
  PAGODA_CHECK(it != by_hash_.end() && it->second == block) << "cached block " << block << " has no hash entry";
  by_hash_.erase(it);
  ++stats_.blocks_evicted;
  if (sink_) sink_(PrefixCacheEvent{PrefixCacheEvent::Kind::kEvicted, h, BlockHash{}, false, {}});
}

}  // namespace pagoda::kv
