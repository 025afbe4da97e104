// Weight quantization: f32 rows -> GGML weight blocks with the rounding of
// ggml's reference quantizers (quantize_row_*_ref, what llama-quantize writes
// without an importance matrix): Q4_0 / Q5_0 scale by the signed max, Q4_1
// min-max, Q8_0 max-abs with round-half-away, Q4_K / Q5_K the weighted
// scale-and-min search of make_qkx2, Q6_K the rmse search of make_qx. F32 /
// F16 / BF16 are element-wise conversions. Used by `pagoda quantize`,
// `pagoda make-model` and the decode-weight copies of --decode-weights.
// (kernels/cpu/quantize.h holds the format-defining dequantizers and the fast
// activation-side quantizers; the bytes written here decode with those.)
// Thread safety: pure functions; the *Rows variants run on the caller's pool.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "base/thread_pool.h"
#include "tensor/dtype.h"
#include "tensor/tensor_view.h"

namespace pagoda::kernels {

// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q4_K, Q5_K, Q6_K.
bool CanQuantizeWeights(DType type);

// One row of n floats -> RowBytes(type, n) bytes. n must be a multiple of the
// block size.
Status QuantizeWeightRow(DType type, const float* src, void* dst, int64_t n);

// n_rows rows of n floats (contiguous) -> n_rows rows of RowBytes(type, n)
// bytes, rows shared out over the pool. Same bytes for any thread count.
Status QuantizeWeightRows(DType type, const float* src, void* dst, int64_t n_rows, int64_t n,
                          ThreadPool& pool);

// Converts every row of a 2-D (or flattened) tensor of any dequantizable type
// into `type`: dequantize a row to f32, quantize it. dst holds
// src.rows() * RowBytes(type, src.ne[0]) bytes.
Status RequantizeTensor(const TensorView& src, DType type, void* dst, ThreadPool& pool);

}  // namespace pagoda::kernels
