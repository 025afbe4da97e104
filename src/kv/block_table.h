// BlockTable: the blocks of one sequence in position order (position p lives
// in block p / block_size), each with the integrity tag it had when this
// sequence took it, so Verify() can tell that no block was recycled under the
// sequence. References into the pool; the owner (the paged KV cache) takes
// and releases them. Engine thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_pool.h"

namespace pagoda::kv {

class BlockTable {
 public:
  int32_t size() const { return static_cast<int32_t>(ids_.size()); }
  bool empty() const { return ids_.empty(); }
  BlockId operator[](int32_t i) const { return ids_[i]; }
  const std::vector<BlockId>& ids() const { return ids_; }

  void Append(BlockId b, uint32_t tag) {
    ids_.push_back(b);
    tags_.push_back(tag);
  }
  void Replace(int32_t i, BlockId b, uint32_t tag) {
    ids_[i] = b;
    tags_[i] = tag;
  }
  // Drops the entries from n on (the caller released them).
  void Resize(int32_t n) {
    ids_.resize(n);
    tags_.resize(n);
  }
  // Whether every block still carries the tag it had when taken.
  bool Verify(const BlockPool& pool) const {
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (pool.integrity_tag(ids_[i]) != tags_[i] || pool.ref_count(ids_[i]) < 1) return false;
    }
    return true;
  }

 private:
  std::vector<BlockId> ids_;
  std::vector<uint32_t> tags_;
};

}  // namespace pagoda::kv
