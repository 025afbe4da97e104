// libFuzzer target: DecodeBlock / DecodeBlockHeader (kv/block_file.h) on
// arbitrary bytes must return a Status (never crash, read out of bounds or
// allocate by a header's counts), leave the payload untouched on any error,
// and accept only records that re-encode to the same bytes. Built with clang
// under ASan+UBSan; only block_file.cc, block_hash.cc and block_pool.cc of
// src/kv are compiled in.
//
// The first input byte picks the case: bit 0 the reader's layout (2 layers,
// f16 or int8); bit 1 starts from a valid record with the remaining bytes
// XORed in from the offset in the second byte (so header fields past the
// magic are reached); bit 2 rewrites the checksum before decoding (so
// mutations get past it to the field checks).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <xxhash.h>

#include "kv/block_file.h"

namespace pagoda::kv {
namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

BlockLayout MakeLayout(kernels::KvType type) {
  BlockLayout l;
  l.model_fingerprint = 0x5eed;
  l.layers = {{8, 8, 2}, {8, 0, 1}};
  l.type = type;
  l.block_size = 4;
  BlockPoolOptions po;
  po.layers = l.layers;
  po.type = type;
  po.block_size = l.block_size;
  l.block_bytes = BlockPool::BlockBytes(po);
  return l;
}

const BlockLayout& LayoutFor(int which) {
  static const BlockLayout f16 = MakeLayout(kernels::KvType::kF16);
  static const BlockLayout int8 = MakeLayout(kernels::KvType::kInt8);
  return which == 0 ? f16 : int8;
}

std::vector<uint8_t> Build(const BlockLayout& l, const uint8_t* data, size_t size) {
  const uint8_t mode = size > 0 ? data[0] : 0;
  std::vector<uint8_t> bytes;
  if (mode & 2) {
    std::vector<int32_t> tokens(l.block_size, 11);
    std::vector<uint8_t> payload(l.block_bytes, 0x5a);
    EncodeBlock(l, BlockHash{1, 2}, BlockHash{3, 4}, tokens, payload.data(), &bytes);
    const size_t at = size > 1 ? data[1] : 0;
    for (size_t i = 2; i < size && at + i - 2 < bytes.size(); ++i) bytes[at + i - 2] ^= data[i];
    if (size > 2 && data[2] == 0xff) bytes.resize(at % bytes.size());  // and truncate
  } else if (size > 1) {
    bytes.assign(data + 1, data + size);
  }
  if ((mode & 4) && static_cast<int64_t>(bytes.size()) >= l.RecordBytes()) {
    const size_t end = static_cast<size_t>(l.RecordBytes() - 8);
    const uint64_t sum = XXH3_64bits(bytes.data(), end);
    std::memcpy(bytes.data() + end, &sum, 8);
  }
  return bytes;
}

}  // namespace
}  // namespace pagoda::kv

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda::kv;
  const BlockLayout& l = LayoutFor(size > 0 ? data[0] & 1 : 0);
  const std::vector<uint8_t> bytes = Build(l, data, size);
  std::vector<uint8_t> payload(l.block_bytes, 0xEE);
  auto rec = DecodeBlock(l, bytes, payload.data());
  auto header = DecodeBlockHeader(l, bytes);
  if (!rec.ok()) {
    (void)rec.status().ToString();
    for (uint8_t b : payload) Check(b == 0xEE);
    return 0;
  }
  // Accepted: the header alone is too, and re-encoding gives the same record.
  Check(header.ok() && header->hash == rec->hash && header->tokens == rec->tokens);
  Check(static_cast<int64_t>(rec->tokens.size()) == l.block_size);
  std::vector<uint8_t> again;
  EncodeBlock(l, rec->hash, rec->parent, rec->tokens, payload.data(), &again);
  Check(static_cast<int64_t>(again.size()) == l.RecordBytes());
  Check(std::memcmp(again.data(), bytes.data(), again.size()) == 0);
  return 0;
}
