// What the KV transfer tests share: a ByteReader over memory, chains of
// blocks hashed as the engine hashes them, and streams built from them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/block_file.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"
#include "kvtransfer/transfer_protocol.h"

namespace pagoda::kvtransfer::testing {

inline constexpr uint64_t kTestModel = 0x00c0ffee12345678ULL;

// Two layers of two heads, blocks of 4 positions.
inline kv::BlockLayout TestLayout(kernels::KvType type = kernels::KvType::kF16, uint64_t fingerprint = kTestModel) {
  kv::BlockLayout l;
  l.model_fingerprint = fingerprint;
  l.layers = {{8, 8, 2}, {8, 8, 2}};
  l.type = type;
  l.block_size = 4;
  kv::BlockPoolOptions po;
  po.layers = l.layers;
  po.type = type;
  po.block_size = l.block_size;
  l.block_bytes = kv::BlockPool::BlockBytes(po);
  return l;
}

// Reads from a byte string; a read past its end is the truncation a closed
// socket gives. Remembers the largest single read asked for.
class MemoryReader final : public ByteReader {
 public:
  explicit MemoryReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  Status ReadExact(void* dst, size_t n) override {
    largest_read_ = std::max(largest_read_, n);
    if (n > bytes_.size() - pos_) {
      pos_ = bytes_.size();
      return InvalidArgument("KV transfer test: the stream is truncated");
    }
    if (n > 0) std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  size_t consumed() const { return pos_; }
  size_t largest_read() const { return largest_read_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  size_t largest_read_ = 0;
};

struct ChainBlock {
  kv::BlockHash hash;
  kv::BlockHash parent;
  std::vector<int32_t> tokens;
  std::vector<uint8_t> payload;  // [block_bytes]
};

// Finite f16 / bf16 bit patterns, and fp8 codes other than NaN, so that
// converted payloads compare as numbers; f32 random finite values; scales
// (scaled types) within a few powers of two of 1.
inline std::vector<uint8_t> RandomPayload(const kv::BlockLayout& l, std::mt19937& rng) {
  std::vector<uint8_t> p(static_cast<size_t>(l.block_bytes), 0);
  kv::BlockPoolOptions po;
  po.layers = l.layers;
  po.type = l.type;
  po.block_size = l.block_size;
  const kv::BlockRegions r = kv::BlockPool::Regions(po);
  const int64_t elem = kernels::KvTypeSize(l.type);
  for (size_t layer = 0; layer < l.layers.size(); ++layer) {
    for (int kv = 0; kv < 2; ++kv) {
      const int64_t n = (kv == 0 ? l.layers[layer].k : l.layers[layer].v) * l.block_size;
      uint8_t* at = p.data() + (kv == 0 ? r.k_offset[layer] : r.v_offset[layer]);
      for (int64_t i = 0; i < n; ++i) {
        switch (l.type) {
          case kernels::KvType::kF32: {
            const float v = std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng);
            std::memcpy(at + i * elem, &v, 4);
            break;
          }
          case kernels::KvType::kF16: {
            uint16_t h;
            do h = static_cast<uint16_t>(rng());
            while (((h >> 10) & 31) == 31);
            std::memcpy(at + i * elem, &h, 2);
            break;
          }
          case kernels::KvType::kBf16: {
            uint16_t b;
            do b = static_cast<uint16_t>(rng());
            while (((b >> 7) & 255) == 255);
            std::memcpy(at + i * elem, &b, 2);
            break;
          }
          case kernels::KvType::kFp8E4M3: {
            uint8_t c;
            do c = static_cast<uint8_t>(rng());
            while ((c & 0x7f) == 0x7f);
            at[i] = c;
            break;
          }
          case kernels::KvType::kInt8: {
            uint8_t c;
            do c = static_cast<uint8_t>(rng());
            while (c == 0x80);
            at[i] = c;
            break;
          }
        }
      }
    }
  }
  if (kernels::KvTypeHasScales(l.type)) {
    for (size_t layer = 0; layer < l.layers.size(); ++layer) {
      const int64_t n = (l.layers[layer].v > 0 ? 2 : 1) * int64_t{l.layers[layer].n_head_kv} * l.block_size;
      for (int64_t i = 0; i < n; ++i) p[r.scale_offset[layer] + i] = static_cast<uint8_t>(120 + rng() % 12);
    }
  }
  return p;
}

// n blocks of one chain: Root(salt), then Next(parent, tokens) each.
inline std::vector<ChainBlock> MakeChain(const kv::BlockLayout& l, int n, uint32_t seed = 1,
                                         std::string_view salt = "") {
  std::mt19937 rng(seed);
  kv::BlockHasher hasher(l.block_size);
  kv::BlockHash parent = hasher.Root(salt);
  std::vector<ChainBlock> chain;
  for (int i = 0; i < n; ++i) {
    ChainBlock b;
    b.parent = parent;
    b.tokens.resize(static_cast<size_t>(l.block_size));
    for (int32_t& t : b.tokens) t = static_cast<int32_t>(rng() % 32000);
    b.hash = hasher.Next(parent, b.tokens);
    b.payload = RandomPayload(l, rng);
    parent = b.hash;
    chain.push_back(std::move(b));
  }
  return chain;
}

inline std::vector<uint8_t> Record(const kv::BlockLayout& l, const ChainBlock& b) {
  std::vector<uint8_t> rec;
  kv::EncodeBlock(l, b.hash, b.parent, b.tokens, b.payload.data(), &rec);
  return rec;
}

// A whole stream: header, one block frame per block, the end frame.
inline std::vector<uint8_t> Stream(const kv::BlockLayout& l, const std::vector<ChainBlock>& chain,
                                   std::string_view id = "xfer-1") {
  std::vector<uint8_t> s;
  AppendStreamHeader(id, &s);
  for (const ChainBlock& b : chain) {
    const std::vector<uint8_t> rec = Record(l, b);
    AppendBlockFrameHeader(static_cast<uint32_t>(rec.size()), &s);
    s.insert(s.end(), rec.begin(), rec.end());
  }
  AppendEndFrame(static_cast<uint32_t>(chain.size()), &s);
  return s;
}

}  // namespace pagoda::kvtransfer::testing
