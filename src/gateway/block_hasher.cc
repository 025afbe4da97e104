#include "gateway/block_hasher.h"

#include <bit>
#include <cstring>

#include <xxhash.h>

namespace pagoda::gateway {

static_assert(std::endian::native == std::endian::little,
              "block hashes are defined over little-endian token ids");

uint64_t ChainBlockHash(uint64_t parent, std::span<const int32_t> block_tokens) {
  return XXH3_64bits_withSeed(block_tokens.data(), block_tokens.size_bytes(), parent);
}

std::vector<uint64_t> ChainedBlockHashes(std::span<const int32_t> tokens, int block_size, uint64_t salt) {
  std::vector<uint64_t> out;
  if (block_size <= 0) return out;
  const size_t bs = static_cast<size_t>(block_size);
  const size_t n_blocks = tokens.size() / bs;
  out.reserve(n_blocks);
  uint64_t h = salt;
  for (size_t i = 0; i < n_blocks; ++i) {
    h = ChainBlockHash(h, tokens.subspan(i * bs, bs));
    out.push_back(h);
  }
  return out;
}

std::vector<uint64_t> ChainedTextHashes(std::string_view text, int block_bytes, uint64_t salt) {
  std::vector<uint64_t> out;
  if (block_bytes <= 0) return out;
  const size_t bb = static_cast<size_t>(block_bytes);
  const size_t n_blocks = text.size() / bb;
  out.reserve(n_blocks);
  uint64_t h = salt;
  for (size_t i = 0; i < n_blocks; ++i) {
    h = XXH3_64bits_withSeed(text.data() + i * bb, bb, h);
    out.push_back(h);
  }
  return out;
}

uint64_t StableHash(std::string_view s) { return XXH3_64bits(s.data(), s.size()); }

uint64_t ScopedRoot(uint64_t base, uint64_t scope_digest) {
  if (scope_digest == 0) return base;
  const uint64_t words[2] = {base, scope_digest};
  return XXH3_64bits_withSeed(words, sizeof words, 0x73636f7065ULL);  // "scope"
}

}  // namespace pagoda::gateway
