#include "kernels/cpu/kv_quant.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "base/check.h"

namespace pagoda::kernels {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace

float Fp8E4M3ToFloat(uint8_t code) {
  const int e = (code >> 3) & 15;
  const int m = code & 7;
  const float sign = (code & 0x80) != 0 ? -1.0f : 1.0f;
  if (e == 15 && m == 7) return sign * std::numeric_limits<float>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -9);
  return sign * std::ldexp(static_cast<float>(8 + m), e - 10);
}

uint8_t FloatToFp8E4M3(float x) {
  const uint32_t u = Bits(x);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7fffffffu;
  // Normal codes: round the mantissa to 3 bits (ties to even) and rebias the
  // exponent from 127 to 7; a carry out of the mantissa bumps the exponent,
  // as it should. Anything above 448 saturates.
  uint32_t normal = ((a + 0x7ffffu + ((a >> 20) & 1u)) >> 20) - (120u << 3);
  normal = normal > 0x7eu ? 0x7eu : normal;
  // |x| < 2^-6 (the smallest normal): 2^14 + |x| rounds |x| to a multiple of
  // 2^-9 (the subnormal step, ulp of 2^14); 8 steps is the smallest normal.
  const uint32_t sub = Bits(FromBits(a) + 16384.0f) - Bits(16384.0f);
  uint32_t code = a < 0x3c800000u ? sub : normal;
  code = a > 0x7f800000u ? 0x7fu : code;  // NaN
  return static_cast<uint8_t>(sign | code);
}

int8_t FloatToInt8(float x) {
  if (!(x == x)) return 0;
  const float c = std::fmin(std::fmax(x, -kInt8Max), kInt8Max);
  return static_cast<int8_t>(std::nearbyint(c));  // default rounding: to nearest even
}

float KvCodeMax(KvType type) {
  PAGODA_CHECK(KvTypeHasScales(type)) << "KvCodeMax of unscaled type " << KvTypeName(type);
  return type == KvType::kFp8E4M3 ? kFp8E4M3Max : kInt8Max;
}

namespace {

int KvScaleExponent(KvType type, float amax) {
  int e_amax = 0, e_max = 0;
  const float f_amax = std::frexp(amax, &e_amax);
  const float f_max = std::frexp(KvCodeMax(type), &e_max);
  const int k = e_amax - e_max + (f_amax > f_max ? 1 : 0);
  return k < -126 ? -126 : k;  // keeps 1/scale finite and the E8M0 byte >= 1
}

}  // namespace

uint8_t KvScaleByte(KvType type, float amax) {
  if (!(amax > 0.0f)) return 0;
  return static_cast<uint8_t>(KvScaleExponent(type, amax) + 127);
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
