#include "kv/block_hash.h"

#include <bit>
#include <cstring>

#include <xxhash.h>

#include "base/check.h"

namespace pagoda::kv {

// Tokens and parent words are hashed as they lie in memory.
static_assert(std::endian::native == std::endian::little, "block hashes are defined over little-endian bytes");

namespace {

constexpr char kDomain[] = "pagoda.kv.v1";

BlockHash FromXxh(XXH128_hash_t h) { return BlockHash{h.low64, h.high64}; }

}  // namespace

std::string BlockHash::ToHex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = kDigits[(hi >> (4 * i)) & 15];
    s[31 - i] = kDigits[(lo >> (4 * i)) & 15];
  }
  return s;
}

struct BlockHasher::State {
  XXH3_state_t* xxh = nullptr;
};

BlockHasher::BlockHasher(int32_t block_size) : block_size_(block_size), state_(new State) {
  PAGODA_CHECK(block_size > 0);
  state_->xxh = XXH3_createState();
  PAGODA_CHECK(state_->xxh != nullptr) << "XXH3_createState failed";
}

BlockHasher::~BlockHasher() { XXH3_freeState(state_->xxh); }

BlockHash BlockHasher::Root(std::string_view salt) {
  XXH3_state_t* st = state_->xxh;
  const uint32_t bs = static_cast<uint32_t>(block_size_);
  PAGODA_CHECK(XXH3_128bits_reset(st) == XXH_OK);
  XXH3_128bits_update(st, kDomain, sizeof(kDomain) - 1);
  XXH3_128bits_update(st, &bs, sizeof(bs));
  XXH3_128bits_update(st, salt.data(), salt.size());
  return FromXxh(XXH3_128bits_digest(st));
}

BlockHash BlockHasher::Next(const BlockHash& parent, std::span<const int32_t> tokens) {
  PAGODA_CHECK(static_cast<int64_t>(tokens.size()) == block_size_)
      << "a block hash covers " << block_size_ << " tokens, got " << tokens.size();
  XXH3_state_t* st = state_->xxh;
  const uint64_t words[2] = {parent.lo, parent.hi};
  PAGODA_CHECK(XXH3_128bits_reset(st) == XXH_OK);
  XXH3_128bits_update(st, words, sizeof(words));
  XXH3_128bits_update(st, tokens.data(), tokens.size_bytes());
  return FromXxh(XXH3_128bits_digest(st));
}

}  // namespace pagoda::kv
