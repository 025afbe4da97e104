// One attention work item (internal to kernels/cpu). The body lives in
// ops_attention_tile_impl.inc and is compiled twice: by ops_attention.cc
// (baseline ISA) and ops_attention_avx512.cc (AVX-512 flags). It uses only raw
// pointers (no std containers) so that no inline library code compiled with
// ISA flags can leak into baseline callers through the linker.
//
// A tile is a run of query rows of one sequence and one KV head g; the `ratio`
// query heads of that group are processed together so each K block is
// transposed once. Keys are streamed in blocks of kKeyBlock with an online
// (running max / running sum) softmax, so scratch does not grow with context.
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
  float* out;
  int64_t out_stride;
  float* scratch;  // AttentionTileScratchFloats(shape, n_rows) floats
};

inline int64_t AttentionTileScratchFloats(const AttentionShape& sh, int n_rows) {
  const int64_t m = static_cast<int64_t>(n_rows) * (sh.n_head / sh.n_head_kv);
  return m * sh.head_dim_k + static_cast<int64_t>(sh.head_dim_k) * kKeyBlock + kKeyBlock +
         m * sh.head_dim_v + 2 * m;
}

void AttentionTileBaseline(const AttentionTileArgs& a);
void AttentionTileAvx512(const AttentionTileArgs& a);

}  // namespace pagoda::kernels::internal

