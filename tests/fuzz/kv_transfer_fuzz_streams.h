// What kv_transfer_fuzz and its seed writer share: the decode replica's
// layout (f16, two layers, the second MLA-like without V), the writers the
// inbox accepts (any KV type of that shape, its own fingerprint or the
// weights-only one), and valid streams of a chain of blocks from each.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/block_convert.h"
#include "kvtransfer/transfer_test_streams.h"

namespace pagoda::kvtransfer::fuzzing {

inline constexpr uint64_t kModel = 0x5eed;
inline constexpr uint64_t kWeightsOnly = 0x5eee;
inline constexpr kernels::KvType kWriterTypes[] = {kernels::KvType::kF16, kernels::KvType::kF32,
                                                   kernels::KvType::kBf16, kernels::KvType::kFp8E4M3,
                                                   kernels::KvType::kInt8};
inline constexpr int kMaxBlocks = 4;

inline kv::BlockLayout OwnLayout() {
  kv::BlockLayout l;
  l.layers = {{8, 8, 2}, {8, 0, 1}};
  l.block_size = 4;
  return kv::LayoutWithType(l, kernels::KvType::kF16, kModel);
}

// Writer `type_index` (into kWriterTypes) with its own fingerprint or the weights-only one.
inline kv::BlockLayout WriterLayout(int type_index, bool weights_only) {
  return kv::LayoutWithType(OwnLayout(), kWriterTypes[type_index % 5], weights_only ? kWeightsOnly : kModel);
}

// kMaxBlocks blocks of one chain as `writer` encodes them (fixed seed: the
// same every call).
inline std::vector<testing::ChainBlock> WriterChain(const kv::BlockLayout& writer) {
  return testing::MakeChain(writer, kMaxBlocks, 77, "fuzz");
}

}  // namespace pagoda::kvtransfer::fuzzing
