// BlockHash: the identity of a full KV block for prefix caching, a 128-bit
// hash chained over the blocks before it, so equal hashes mean equal token
// prefixes (not only equal blocks). The byte-level definition below is a
// stable contract: a KV-aware router that wants to predict hits must hash
// exactly the same bytes (same tokenizer, block size and salt).
//   root        = XXH3_128("pagoda.kv.v1" || le32(block_size) || salt bytes)
//   block i     = XXH3_128(le64(parent.lo) || le64(parent.hi) || le32(token) * block_size)
// where parent is the root for block 0 and block i-1's hash after that. The
// salt (cache_salt, tenant, LoRA id) is folded into the root, so every block
// of a salted chain differs from the unsalted one.
// BlockHasher keeps an XXH3 state so hashing allocates nothing; one per
// owner, not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace pagoda::kv {

struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const BlockHash&) const = default;
  std::string ToHex() const;  // 32 hex digits, hi first
};

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 0x9e3779b97f4a7c15ULL)); }
};

class BlockHasher {
 public:
  explicit BlockHasher(int32_t block_size);
  ~BlockHasher();
  BlockHasher(const BlockHasher&) = delete;
  BlockHasher& operator=(const BlockHasher&) = delete;

  int32_t block_size() const { return block_size_; }
  // Parent of a chain's first block.
  BlockHash Root(std::string_view salt);
  // Hash of the block holding `tokens` ([block_size] ids) after `parent`.
  BlockHash Next(const BlockHash& parent, std::span<const int32_t> tokens);

 private:
  struct State;
  int32_t block_size_;
  std::unique_ptr<State> state_;
};

}  // namespace pagoda::kv
