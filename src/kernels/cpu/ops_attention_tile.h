// One attention work item (internal to kernels/cpu). The body lives in
// ops_attention_tile_impl.inc (with ops_attention_kv_rows.inc) and is compiled
// three times: by ops_attention.cc (baseline ISA), ops_attention_avx2.cc and
// ops_attention_avx512.cc (with those ISA flags; F16C converts f16 K/V there).
// It uses only raw pointers (no std containers) and internal-linkage helpers
// so that no inline code compiled with ISA flags can leak into baseline
// callers through the linker.
//
// A tile is a run of query rows of one sequence and one KV head g; the `ratio`
// query heads of that group are processed together so each K block is
// transposed (and converted from f16 / dequantized) once.
// Keys are walked in blocks of kKeyBlock, the KV block table one block at a
// time; a K block is dequantized in registers on its way into a transposed
// [dk, kKeyBlock] copy (16x16 / 8x8 register transposes), so the scores of
// a query are FMAs over d in order, 16 (8) keys per vector; up to four
// queries share each load of K and V. Every (query, key) score, softmax and
// output sum is formed the same way whatever the tile holds (batch
// invariance); see ops_attention_tile_impl.inc.
// f32, bf16, fp8 and int8 caches: keys are streamed in blocks of kKeyBlock
// with an online (running max / running sum) softmax, so scratch does not
// grow with context; bf16 / fp8 / int8 rows are dequantized (times their
// block's scale) as each key block is loaded.
// f16 cache: the scores of the tile are kept ([queries, keys]) so that the
// softmax is normalised before its weights are rounded to f16, as ggml does;
// Attention() bounds that scratch by shrinking the tile for long contexts.
// With AVX-512 a cached f16 K block is transposed as f16 words (half the
// shuffles); a decode tile (at most four queries) converts it as the score
// loop loads it and transposes the next block in steps between those FMAs,
// larger tiles convert it to the f32 transpose first. Same bits either way.
#pragma once

#include <cstdint>

#include "kernels/cpu/ops.h"

namespace pagoda::kernels::internal {

inline constexpr int kKeyBlock = 64;

struct AttentionTileArgs {
  const AttentionShape* shape;
  const float* q;
  int64_t q_stride;
  const int32_t* positions;
  const KvView* kv;
  const int32_t* rows;  // n_rows batch rows of one sequence
  int n_rows;
  int g;  // kv head
  int h0 = 0;  // first query head of the tile within g's group
  int n_h = 0;  // query heads of the tile (0: the whole group)
  float* out;
  int64_t out_stride;
  float* scratch;  // AttentionTileScratchFloats(shape, type, n_rows, n_keys) floats
};

// Scratch of a tile of n_rows query rows over at most n_keys keys.
inline int64_t AttentionTileScratchFloats(const AttentionShape& sh, KvType type, int n_rows,
                                          int32_t n_keys) {
  const int64_t m = static_cast<int64_t>(n_rows) * (sh.n_head / sh.n_head_kv);
  const int64_t dk = sh.head_dim_k, dv = sh.head_dim_v;
  if (type != KvType::kF16) {
    // Online softmax (scores of up to four queries); dequantized K and V rows
    // of a key block; a zero row.
    return m * dk + dk * kKeyBlock + 4 * kKeyBlock + m * dv + 2 * m + kKeyBlock * (dk + dv) + dk;
  }
  const int64_t n_pad = (static_cast<int64_t>(n_keys) + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
  return m * dk + dk * kKeyBlock + kKeyBlock * (dk > dv ? dk : dv) + m * dv + m * n_pad + dk;
}

void AttentionTileBaseline(const AttentionTileArgs& a);
void AttentionTileAvx2(const AttentionTileArgs& a);
void AttentionTileAvx512(const AttentionTileArgs& a);

// f32 -> f16 (round to nearest even) of n values; per ISA like the tile.
void StoreF16Baseline(const float* src, int64_t n, uint16_t* dst);
void StoreF16Avx2(const float* src, int64_t n, uint16_t* dst);
void StoreF16Avx512(const float* src, int64_t n, uint16_t* dst);

// LoadKvRow (ops.h) per ISA: the tile's own dequantizers.
void LoadKvRowBaseline(const void* src, int64_t n, KvType type, float scale, float* dst);
void LoadKvRowAvx2(const void* src, int64_t n, KvType type, float scale, float* dst);
void LoadKvRowAvx512(const void* src, int64_t n, KvType type, float scale, float* dst);

// StoreKvRowQuantized (ops.h) per ISA; the baseline one is the reference the
// others equal byte for byte.
void StoreKvQuantizedBaseline(const float* src, int n_heads, int head_dim, KvType type, uint8_t* codes,
                              uint8_t* scales, int64_t scale_stride);
void StoreKvQuantizedAvx2(const float* src, int n_heads, int head_dim, KvType type, uint8_t* codes,
                          uint8_t* scales, int64_t scale_stride);
void StoreKvQuantizedAvx512(const float* src, int n_heads, int head_dim, KvType type, uint8_t* codes,
                            uint8_t* scales, int64_t scale_stride);

}  // namespace pagoda::kernels::internal
