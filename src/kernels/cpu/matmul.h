// MatMul: y = x * W^T for a weight W stored in any supported dtype, reading the
// quantized blocks directly (no dequantized copy of W).
//   w: [n_out rows, n_in cols] (GGML ne0 = n_in, ne1 = n_out)
//   x: [n_tokens, n_in]  f32, row-major
//   y: [n_tokens, n_out] f32, row-major
// Decode (n_tokens small) is bandwidth-bound GEMV; prefill is a blocked GEMM.
// ISA (AVX-512 / AVX2 / scalar) is chosen once at run time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "base/status.h"
#include "base/thread_pool.h"
#include "tensor/tensor_view.h"

namespace pagoda::kernels {

// Validates that w can be used by MatMul (type supported, ne0 a multiple of the block size).
Status CheckMatMulWeight(const TensorView& w);

// w must have passed CheckMatMulWeight. Thread-safe only per pool.
void MatMul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// One weight of a MatMulShared call: y = x * w^T, y: [n_tokens, w.rows()].
struct MatMulTarget {
  const TensorView* w;
  float* y;
};
inline constexpr int kMaxMatMulTargets = 8;

// MatMul for up to kMaxMatMulTargets weights that read the same x (Q/K/V,
// gate/up): x is converted once per activation layout (e.g. once for Q4_K and
// Q6_K weights alike) and the rows of all weights are shared out in one pool
// Run, so the threads finish together and sync once. Every w must have passed
// CheckMatMulWeight and have the same ne0. Same results as separate MatMuls.
void MatMulShared(std::span<const MatMulTarget> targets, const float* x, int64_t n_tokens, ThreadPool& pool);

// One weight of a MatMulGrouped call, with its own input rows:
// y = x * w^T, x: [n_tokens, w.ne[0]], y: [n_tokens, w.rows()].
struct MatMulGroupTarget {
  const TensorView* w;
  const float* x;
  int64_t n_tokens;
  float* y;
};

// MatMul of any number of weights, each on its own rows (the experts of an
// MoE layer, each with the tokens routed to it), in one pool Run: the rows of
// all weights are shared out together, so a step with many small matrices
// syncs once. Targets with the same x, width and activation layout share one
// converted copy. Every w must have passed CheckMatMulWeight. Each target's
// result is exactly what MatMul(w, x, n_tokens, y) gives.
void MatMulGrouped(std::span<const MatMulGroupTarget> targets, ThreadPool& pool);

// Scalar reference twin (dequantize row, double accumulation). For tests.
void MatMulReference(const TensorView& w, const float* x, int64_t n_tokens, float* y);

enum class Isa { kScalar, kAvx2, kAvx512 };
Isa DetectedIsa();
// Forces an ISA (tests compare every path); must not exceed DetectedIsa().
void SetIsaForTesting(Isa isa);
Isa ActiveIsa();
const char* IsaName(Isa isa);

// The kernel MatMul runs now (active ISA and batch path) for a weight of
// `type` and a call of n_tokens rows, as "<isa>/<kernel family>", e.g.
// "avx512/vnni-gemv"; `packed`: the weight has a load-time packed copy
// (TensorView::packed, packed_weights.h). The same selection MatMul makes, so
// `pagoda bench` prints what it measures. "none" when no kernel takes the type.
const char* PlanName(DType type, int64_t n_tokens, bool packed);

// Kernel family for quantized weights (A/B runs and tests; F32/F16/BF16
// weights are not affected):
//   kAuto   the measured choice per ISA, type and n_tokens (on AVX2 every
//           choice gives bitwise the same row whatever n_tokens is)
//   kLegacy int8 GEMV plans below 8 tokens, dequantizing GEMM from 8 (the
//           choice before the int8 panel existed)
//   kGemv   the int8 GEMV register-tile plans for every n_tokens (AVX2
//           Q4_0/Q4_1/Q5_0/Q8_0: the panel's fused kernel, which reads the
//           weight rows directly)
//   kPanel  the int8 panel ("small GEMM") for every n_tokens (AVX-512, and
//           AVX2 for Q4_0/Q4_1/Q5_0/Q8_0; other types and scalar fall back
//           to kAuto)
//   kGemm   the dequantize-to-bf16 (AVX2: f32) GEMM for every n_tokens
// The environment variable PAGODA_BATCH_PATH (auto|legacy|gemv|panel|gemm)
// sets the initial value.
enum class BatchPath { kAuto, kLegacy, kGemv, kPanel, kGemm };
void SetBatchPathForTesting(BatchPath path);
BatchPath ActiveBatchPath();
const char* BatchPathName(BatchPath path);
std::optional<BatchPath> ParseBatchPath(std::string_view name);

}  // namespace pagoda::kernels
