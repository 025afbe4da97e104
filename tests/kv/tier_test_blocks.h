// Layouts and blocks the offload-tier tests share (disk, Redis, loader):
// two small f16 layers of blocks of 4 positions, and deterministic blocks
// whose every byte depends on their id.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

#include "kv/block_file.h"
#include "kv/block_pool.h"

namespace pagoda::kv::testing {

inline constexpr uint64_t kTestModel = 0x00c0ffee12345678ULL;

inline BlockLayout TestLayout(uint64_t fingerprint = kTestModel, kernels::KvType type = kernels::KvType::kF16) {
  BlockLayout l;
  l.model_fingerprint = fingerprint;
  l.layers = {{8, 8, 2}, {8, 8, 2}};
  l.type = type;
  l.block_size = 4;
  BlockPoolOptions po;
  po.layers = l.layers;
  po.type = l.type;
  po.block_size = l.block_size;
  l.block_bytes = BlockPool::BlockBytes(po);
  return l;
}

struct TestBlock {
  BlockHash hash;
  BlockHash parent;
  std::vector<int32_t> tokens;
  std::vector<uint8_t> payload;
};

// Not a chain: hash and parent are made up from the id (tiers do not check chains).
inline TestBlock MakeTestBlock(const BlockLayout& l, uint64_t id) {
  TestBlock b;
  b.hash = BlockHash{id * 0x9e3779b97f4a7c15ULL, id + 1};
  b.parent = BlockHash{id, 0};
  b.tokens.resize(l.block_size);
  std::iota(b.tokens.begin(), b.tokens.end(), static_cast<int32_t>(id * 10));
  b.payload.resize(l.block_bytes);
  for (size_t i = 0; i < b.payload.size(); ++i) b.payload[i] = static_cast<uint8_t>(id * 13 + i * 7);
  return b;
}

}  // namespace pagoda::kv::testing
