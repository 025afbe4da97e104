// Internal contract between the MatMul driver (matmul.cc: validation,
// threading, scratch) and the per-ISA kernel files (matmul_scalar.cc,
// matmul_avx2.cc, matmul_avx512.cc). Kernel files export only plain functions
// taking raw pointers and no inline helpers, so no code compiled with ISA flags
// can be merged (ODR) into a generic caller.
#pragma once

#include <cstdint>

#include "kernels/cpu/matmul.h"
#include "tensor/dtype.h"

namespace pagoda::kernels::internal {

// How one ISA computes y = x * W^T for one weight type and batch shape.
//
// 1. Each token row x[t] is converted once per call by convert_act into
//    act_row_bytes(n_in) bytes (an activation layout private to the plan:
//    f32, bf16 or a Q8 variant).
// 2. The output rows are split into chunks of row_chunk rows. If pack_rows is
//    set, each chunk of weight rows is first converted into a private panel of
//    panel_row_bytes(n_in) bytes per row (e.g. dequantized to bf16), and
//    compute reads the panel; otherwise compute reads the raw weight rows.
// 3. compute fills y[t * ldy + r] for r < n_rows, t < n_tok.
struct Plan {
  int64_t (*act_row_bytes)(int64_t n_in);
  void (*convert_act)(const float* x, int64_t n_in, void* dst);
  int64_t (*panel_row_bytes)(int64_t n_in);  // null when pack_rows is null
  void (*pack_rows)(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, void* dst);
  void (*compute)(const uint8_t* w, int64_t w_stride, int64_t n_rows, const uint8_t* act, int64_t act_stride,
                  int64_t n_tok, int64_t n_in, float* y, int64_t ldy);
  int64_t row_chunk;
  // "<isa>/<kernel family>", e.g. "avx512/int8-panel" (PlanName, pagoda bench).
  const char* name;
};

// Each returns null when the ISA has no plan for (type, n_tokens).
// `path` picks among the quantized-weight kernels (see BatchPath in matmul.h).
const Plan* ScalarPlan(DType type, int64_t n_tokens);
const Plan* Avx2Plan(DType type, int64_t n_tokens, BatchPath path);
const Plan* Avx512Plan(DType type, int64_t n_tokens, BatchPath path);
// Decode plans for Q4_K/Q5_K/Q6_K (matmul_kquant_avx512.cc); null for other types.
const Plan* Avx512KQuantDecodePlan(DType type);
// The same for AVX2 (matmul_kquant_avx2.cc).
const Plan* Avx2KQuantDecodePlan(DType type);
// Batched int8 panel plans ("small GEMM", matmul_int8_avx512.cc) for
// Q4_0/Q4_1/Q5_0/Q8_0/Q4_K/Q5_K/Q6_K; null for other types.
const Plan* Avx512Int8PanelPlan(DType type);
// Their small-batch twins (matmul_int8_fused_avx512.cc): the panel's integer
// sums and f32 fold read straight from the weight rows, so results are
// bitwise the panel's at every token count; null for other types.
const Plan* Avx512Int8FusedPlan(DType type);
// Pre-packed Q4_K and Q6_K for them (matmul_int8_fused_avx512.cc; the
// checkpoint's bytes, 16 rows interleaved by dword): bytes for n_rows rows
// (0 for other types, or if n_in is not whole super-blocks), the packing of
// one group of <= 16 rows, and the plan reading it (bitwise the panel's
// results; null for other types).
int64_t Avx512PackedKBytes(DType type, int64_t n_rows, int64_t n_in);
void Avx512PackKRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, uint8_t* dst);
const Plan* Avx512PackedKPlan(DType type);
// The AVX2 twin (matmul_int8_avx2.cc): Q4_0/Q4_1/Q5_0/Q8_0, and through
// Avx2KQuantPanelPlan Q4_K/Q5_K/Q6_K; null for other types. The panel (kAuto from a per-type n_tokens, kPanel always) or a
// fused kernel reading the weight rows directly (kAuto below it, kGemv
// always), with the same arithmetic: results do not depend on n_tokens or
// the path, bitwise. Only for kAuto, kPanel and kGemv.
const Plan* Avx2Int8PanelPlan(DType type, int64_t n_tokens, BatchPath path);
// Q4_K/Q5_K/Q6_K (matmul_int8_kquant_avx2.cc), the same contract: the
// per-call panel or a fused kernel of the same arithmetic; null otherwise.
const Plan* Avx2KQuantPanelPlan(DType type, int64_t n_tokens, BatchPath path);

// Pre-packed weights (packed_weights.h), AVX-512 VNNI, Q4_0 only for now:
// the whole matrix repacked once into the panel kernel's groups of 16 rows.
// Bytes for n_rows rows (0: no packed layout for the type), the stride per
// row (a 16-row group is 16 strides; compute reads row chunks from
// packed + r0 * stride), the packing itself, and the plan whose compute
// reads it (no pack_rows). Results are bitwise those of the panel plan.
int64_t Avx512PackedBytes(DType type, int64_t n_rows, int64_t n_in);
int64_t Avx512PackedRowStride(DType type, int64_t n_in);
void Avx512PackRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, uint8_t* dst);
const Plan* Avx512PackedPlan(DType type, int64_t n_tokens);
// The AVX2 twins (matmul_int8_avx2.cc): Q4_0, Q4_1 and Q8_0 stored as the
// int8 panel's groups of 8 rows (1.1x-1.2x the checkpoint's bytes), read by
// the panel kernel at every token count; bitwise the per-call panel's and the
// fused kernel's results.
int64_t Avx2PackedBytes(DType type, int64_t n_rows, int64_t n_in);
int64_t Avx2PackedRowStride(DType type, int64_t n_in);
void Avx2PackRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, uint8_t* dst);
const Plan* Avx2PackedPlan(DType type, int64_t n_tokens);
// Their K-quant part (matmul_int8_kquant_avx2.cc): Q4_K, the panel's level
// bytes with a compact per-super-block scale record (1.056x the checkpoint);
// 0 / null for the other types.
int64_t Avx2KQuantPackedBytes(DType type, int64_t n_rows, int64_t n_in);
int64_t Avx2KQuantPackedRowStride(DType type, int64_t n_in);
void Avx2KQuantPackRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, uint8_t* dst);
const Plan* Avx2KQuantPackedPlan(DType type, int64_t n_tokens);

}  // namespace pagoda::kernels::internal
