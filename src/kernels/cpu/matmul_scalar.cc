// Portable MatMul path for every weight type: weight rows are dequantized to
// f32 (the reference dequantizer) and dotted with f32 activations in f32.
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/quantize.h"

namespace pagoda::kernels::internal {
namespace {

int64_t F32RowBytes(int64_t n_in) { return n_in * static_cast<int64_t>(sizeof(float)); }

void CopyF32(const float* x, int64_t n_in, void* dst) { std::memcpy(dst, x, n_in * sizeof(float)); }

void DequantRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, void* dst) {
  float* out = static_cast<float*>(dst);
  for (int64_t r = 0; r < n_rows; ++r) {
    PAGODA_CHECK(DequantizeRow(type, w + r * w_stride, out + r * n_in, n_in).ok());
  }
}

void ComputeF32(const uint8_t* w, int64_t w_stride, int64_t n_rows, const uint8_t* act, int64_t act_stride,
                int64_t n_tok, int64_t n_in, float* y, int64_t ldy) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* wr = reinterpret_cast<const float*>(w + r * w_stride);
    for (int64_t t = 0; t < n_tok; ++t) {
      const float* xt = reinterpret_cast<const float*>(act + t * act_stride);
      float s[4] = {0, 0, 0, 0};
      int64_t k = 0;
      for (; k + 4 <= n_in; k += 4) {
        for (int j = 0; j < 4; ++j) s[j] += wr[k + j] * xt[k + j];
      }
      for (; k < n_in; ++k) s[0] += wr[k] * xt[k];
      y[t * ldy + r] = (s[0] + s[1]) + (s[2] + s[3]);
    }
  }
}

const Plan kPlan = {F32RowBytes, CopyF32, F32RowBytes, DequantRows, ComputeF32, 8, "scalar/dequant-f32"};

}  // namespace

const Plan* ScalarPlan(DType type, int64_t n_tokens) {
  const auto info = LookupDType(static_cast<uint32_t>(type));
  if (!info || !info->weights_supported) return nullptr;
  return &kPlan;
}

}  // namespace pagoda::kernels::internal
