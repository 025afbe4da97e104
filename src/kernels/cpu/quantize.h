// Row quantize / dequantize for every weight dtype (GGML-compatible blocks).
// These are the scalar reference implementations; they define the formats.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "tensor/dtype.h"

namespace pagoda::kernels {

// Writes RowBytes(type, n) bytes to dst. n must be a multiple of the block size.
// Supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q4_K, Q5_K, Q6_K, Q8_K.
Status QuantizeRow(DType type, const float* src, void* dst, int64_t n);
// Reads RowBytes(type, n) bytes from src, writes n floats.
Status DequantizeRow(DType type, const void* src, float* dst, int64_t n);

}  // namespace pagoda::kernels
