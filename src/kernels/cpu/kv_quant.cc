#include "kernels/cpu/kv_quant.h"

#include <cmath>
#include <limits>

#include "base/check.h"
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
  for (int h = 0; h < n_heads; ++h) {
    const float* x = src + static_cast<int64_t>(h) * head_dim;
    float amax = 0.0f;
    for (int d = 0; d < head_dim; ++d) amax = std::fabs(x[d]) > amax ? std::fabs(x[d]) : amax;  // NaN ignored
    amax = std::fmin(amax, std::numeric_limits<float>::max());
    const uint8_t e = KvScaleByte(type, amax);
    scales[h * scale_stride] = e;
    const float scale = KvScaleValue(e);
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;  // exact: a power of two
    uint8_t* dst = codes + static_cast<int64_t>(h) * head_dim;
    if (type == KvType::kFp8E4M3) {
      for (int d = 0; d < head_dim; ++d) dst[d] = FloatToFp8E4M3(x[d] * inv);
    } else {
      for (int d = 0; d < head_dim; ++d) dst[d] = static_cast<uint8_t>(FloatToInt8(x[d] * inv));
    }
  }
}

}  // namespace pagoda::kernels
