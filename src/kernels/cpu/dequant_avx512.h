// AVX-512 block dequantization to f32, shared by the AVX-512 MatMul kernels.
// Call only when DetectedIsa() is kAvx512.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace pagoda::kernels::internal {

// Dequantizes elements [k0, k0 + n) of one weight row to out[0, n). k0 and n
// are multiples of the type's block size (any n for F32/F16/BF16).
void DequantF32Avx512(DType type, const uint8_t* row, int64_t k0, int64_t n, float* out);

}  // namespace pagoda::kernels::internal
