#include "kernels/cpu/kv_quant.h"

#include <cmath>
#include <limits>

#include "base/check.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops_attention_tile.h"
#include "kernels/kv_codec_bits.h"

namespace pagoda::kernels {
float Fp8E4M3ToFloat(uint8_t code) {
  const int e = (code >> 3) & 15;
  const int m = code & 7;
  const float sign = (code & 0x80) != 0 ? -1.0f : 1.0f;
  if (e == 15 && m == 7) return sign * std::numeric_limits<float>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -9);
  return sign * std::ldexp(static_cast<float>(8 + m), e - 10);
}

uint8_t FloatToFp8E4M3(float x) { return internal::EncodeFp8E4M3(x); }

int8_t FloatToInt8(float x) {
  if (!(x == x)) return 0;
  const float c = std::fmin(std::fmax(x, -kInt8Max), kInt8Max);
  return static_cast<int8_t>(std::nearbyint(c));  // default rounding: to nearest even
}

float KvCodeMax(KvType type) {
  PAGODA_CHECK(KvTypeHasScales(type)) << "KvCodeMax of unscaled type " << KvTypeName(type);
  return type == KvType::kFp8E4M3 ? kFp8E4M3Max : kInt8Max;
}

uint8_t KvScaleByte(KvType type, float amax) {
  if (!(amax > 0.0f)) return 0;
  return static_cast<uint8_t>(internal::KvScaleExponent(amax, KvCodeMax(type)) + 127);
}

void StoreKvRowQuantized(const float* src, int n_heads, int head_dim, KvType type, uint8_t* codes,
                         uint8_t* scales, int64_t scale_stride) {
  PAGODA_CHECK(KvTypeHasScales(type));
  switch (ActiveIsa()) {
    case Isa::kAvx512: return internal::StoreKvQuantizedAvx512(src, n_heads, head_dim, type, codes, scales, scale_stride);
    case Isa::kAvx2: return internal::StoreKvQuantizedAvx2(src, n_heads, head_dim, type, codes, scales, scale_stride);
    case Isa::kScalar:
      return internal::StoreKvQuantizedBaseline(src, n_heads, head_dim, type, codes, scales, scale_stride);
  }
}

}  // namespace pagoda::kernels
