// The argument structs of the Backend ops (backend.h): a weight matrix, one
// layer's paged KV pool, the rows of a step with their block tables, and the
// records of the batched KV integrity check. Every pointer is a device
// address of the backend the op runs on (host memory for the CPU backend).
#pragma once

#include <cstdint>

#include "kernels/cpu/ops.h"
#include "tensor/dtype.h"

namespace pagoda::kernels {

// A weight in its GGUF blocks: [n_out rows, n_in cols], row r at
// data + r * RowBytes(type, n_in). y = x * W^T.
struct DeviceMatrix {
  DType type = DType::kF32;
  int64_t n_in = 0;
  int64_t n_out = 0;
  const void* data = nullptr;
};

// One layer's K/V pool: n_blocks blocks of block_size positions. Block b,
// slot s, KV head h of K starts at element
//   (b * block_size + s) * n_head_kv * head_dim_k + h * head_dim_k
// of k (V likewise with head_dim_v): the layout PagedKvCache gives a block.
// Scaled types (fp8_e4m3, int8): element = code * KvScaleValue(scale byte),
// the byte of (b, h, s) at k_scales[(b * n_head_kv + h) * block_size + s]
// (head-major per block, as KvView's k_scales[b][h * block_size + s]).
struct KvPoolView {
  KvType type = KvType::kF16;
  int32_t n_blocks = 0;
  int32_t block_size = 0;
  int n_head_kv = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  void* k = nullptr;
  void* v = nullptr;
  uint8_t* k_scales = nullptr;  // scaled types only
  uint8_t* v_scales = nullptr;
};

// The rows of one step: row r belongs to sequence row_seq[r] at position
// positions[r]; sequence s's blocks are block_tables[s * max_blocks + i]
// (position p in entry p / block_size). Rows attend causally to positions
// [0, positions[r]] of their sequence, all of which must be stored.
struct PagedBatch {
  int64_t n_rows = 0;
  const int32_t* positions = nullptr;     // [n_rows]
  const int32_t* row_seq = nullptr;       // [n_rows], each in [0, n_seqs)
  const int32_t* block_tables = nullptr;  // [n_seqs, max_blocks]
  int32_t n_seqs = 0;
  int32_t max_blocks = 0;
};

// The batched KV integrity check (kv/integrity_tracker.h) as flat arrays:
// sequence s was given blocks recorded_ids[recorded_offsets[s] ..
// recorded_offsets[s + 1]) with recorded_tags, and its live block table is
// live_ids[live_offsets[s] .. live_offsets[s + 1]). A sequence is intact when
// both lists have the same length and every live entry equals the recorded
// id, lies in [0, n_blocks), still carries the recorded tag in pool_tags and
// is held (pool_refs > 0).
struct KvIntegrityBatch {
  int32_t n_seqs = 0;
  const int32_t* recorded_offsets = nullptr;  // [n_seqs + 1]
  const int32_t* recorded_ids = nullptr;
  const uint32_t* recorded_tags = nullptr;
  const int32_t* live_offsets = nullptr;      // [n_seqs + 1]
  const int32_t* live_ids = nullptr;
  const uint32_t* pool_tags = nullptr;        // [n_blocks]
  const int32_t* pool_refs = nullptr;         // [n_blocks]
  int32_t n_blocks = 0;
};
// Per-sequence results of the check: intact, lengths differ, or the index of
// the first bad table entry (>= 0).
inline constexpr int32_t kKvIntact = -1;
inline constexpr int32_t kKvLengthChanged = -2;

// Largest k of Backend::TopK.
inline constexpr int kMaxTopK = 64;
// Largest head dimension of Backend::PagedAttention / StoreKv.
inline constexpr int kMaxDeviceHeadDim = 256;

}  // namespace pagoda::kernels
