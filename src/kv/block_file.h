// The KV block file format: one full prefix-cache block outside the pool
// (offload tiers, and later prefill -> decode transfer), self-describing and
// checked. A run of blocks is their records back to back. All integers
// little-endian; docs/KV_OFFLOAD.md is the normative description.
//
//   off  size  field
//   0    8     magic "PGKVBLK\0"
//   8    4     version (1)
//   12   4     header bytes H (= 96 + 4 * block_size; the payload starts at H)
//   16   8     model fingerprint (BlockLayout::model_fingerprint)
//   24   8     layout hash (BlockLayout::LayoutHash: layer widths, KV type, block size)
//   32   4     KV type (kernels::KvType as u32)
//   36   4     block_size
//   40   4     n_layers
//   44   4     reserved (0)
//   48   16    block hash (lo, hi)
//   64   16    parent hash (lo, hi; the chain's root for a first block)
//   80   8     payload bytes P (= BlockLayout::block_bytes)
//   88   8     reserved (0)
//   96   4*bs  the block's token ids (i32)
//   H    P     payload: the pool block's bytes verbatim (BlockPool layout:
//              per layer K then V rows, then the scales of scaled types)
//   H+P  8     XXH3-64 of bytes [0, H+P)
// A reader takes the payload without per-element conversion when the layout
// hash matches its own; anything else about the header that disagrees is
// refused (another model, another layout), as is a bad checksum.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "kernels/cpu/ops.h"
#include "kv/block_hash.h"
#include "kv/block_pool.h"

namespace pagoda::kv {

inline constexpr uint32_t kBlockFileVersion = 1;
inline constexpr int64_t kBlockFileFixedHeader = 96;

// What a pool block's bytes mean, and whose they are.
struct BlockLayout {
  uint64_t model_fingerprint = 0;  // the weights and tokenizer that produced the KV
  std::vector<KvLayerWidths> layers;
  kernels::KvType type = kernels::KvType::kF16;
  int32_t block_size = 16;
  int64_t block_bytes = 0;  // BlockPool::BlockBytes of the same options

  // XXH3-64 over (n_layers, each layer's k, v, n_head_kv, type, block_size,
  // block_bytes): equal hashes mean a payload can be copied verbatim.
  uint64_t LayoutHash() const;
  // Header + payload + checksum bytes of one record.
  int64_t RecordBytes() const { return kBlockFileFixedHeader + 4 * int64_t{block_size} + block_bytes + 8; }
};

// The identity of one stored block.
struct BlockRecord {
  BlockHash hash;
  BlockHash parent;
  std::vector<int32_t> tokens;  // [block_size]
};

// Appends one record (header, `tokens` [block_size], `payload`
// [layout.block_bytes], checksum) to `out`.
void EncodeBlock(const BlockLayout& layout, const BlockHash& hash, const BlockHash& parent,
                 std::span<const int32_t> tokens, const void* payload, std::vector<uint8_t>* out);

// Reads the record at the start of `bytes` (exactly RecordBytes() of them
// are used) for a reader with layout `expect`: copies the payload into
// `payload` ([expect.block_bytes]) and returns the record. Errors, nothing
// written to `payload` on any: InvalidArgument (bad magic, version, sizes
// or counts, truncated input), FailedPrecondition (another model
// fingerprint or layout), DataLoss (checksum mismatch).
Result<BlockRecord> DecodeBlock(const BlockLayout& expect, std::span<const uint8_t> bytes, void* payload);

// DecodeBlock's checks (header, sizes, checksum) without copying the
// payload out: a record kept whole (the memory tier) is verified in place.
Result<BlockRecord> VerifyBlock(const BlockLayout& expect, std::span<const uint8_t> bytes);

// Only the header (the first 96 + 4 * block_size bytes): magic, version,
// sizes, fingerprint and layout checked, no checksum (the disk tier's
// startup scan). Same errors as DecodeBlock, minus DataLoss.
Result<BlockRecord> DecodeBlockHeader(const BlockLayout& expect, std::span<const uint8_t> bytes);

// What a record's header says about its writer, checked only for magic,
// version and a known KV type: a reader that converts between KV types
// (kv/block_convert.h) rebuilds the writer's layout from these and then
// decodes with DecodeBlock as usual. InvalidArgument on a short or foreign
// header.
struct BlockOrigin {
  uint64_t model_fingerprint = 0;
  kernels::KvType type = kernels::KvType::kF16;
  int32_t block_size = 0;
  int64_t record_bytes = 0;  // the whole record as its header sizes it (header + payload + checksum)
};
Result<BlockOrigin> PeekBlockOrigin(std::span<const uint8_t> bytes);

}  // namespace pagoda::kv
