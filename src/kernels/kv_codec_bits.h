// The bit-level encoders of the scaled KV types, shared by the CPU codec
// (cpu/kv_quant.cc) and the CUDA KV store (cuda/attention.cu) so that both
// write the same bytes: FP8 E4M3 (round to nearest even, saturating) and the
// E8M0 scale exponent of a head row. Internal to kernels, not a public
// header. A CUDA includer defines PAGODA_KV_CODEC_FN as
// `__host__ __device__ inline` first; everyone else gets plain inline.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#ifndef PAGODA_KV_CODEC_FN
#define PAGODA_KV_CODEC_FN inline
#endif

namespace pagoda::kernels::internal {

PAGODA_KV_CODEC_FN uint32_t KvBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

PAGODA_KV_CODEC_FN float KvFromBits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// kv_quant.h FloatToFp8E4M3.
PAGODA_KV_CODEC_FN uint8_t EncodeFp8E4M3(float x) {
  const uint32_t u = KvBits(x);
  const uint32_t sign = (u >> 24) & 0x80u;
  const uint32_t a = u & 0x7fffffffu;
  // Normal codes: round the mantissa to 3 bits (ties to even) and rebias the
  // exponent from 127 to 7; a carry out of the mantissa bumps the exponent,
  // as it should. Anything above 448 saturates.
  uint32_t normal = ((a + 0x7ffffu + ((a >> 20) & 1u)) >> 20) - (120u << 3);
  normal = normal > 0x7eu ? 0x7eu : normal;
  // |x| < 2^-6 (the smallest normal): 2^14 + |x| rounds |x| to a multiple of
  // 2^-9 (the subnormal step, ulp of 2^14); 8 steps is the smallest normal.
  const uint32_t sub = KvBits(KvFromBits(a) + 16384.0f) - KvBits(16384.0f);
  uint32_t code = a < 0x3c800000u ? sub : normal;
  code = a > 0x7f800000u ? 0x7fu : code;  // NaN
  return static_cast<uint8_t>(sign | code);
}

// The exponent k of the smallest power of two with amax <= code_max * 2^k
// (at least -126); amax > 0 and finite.
PAGODA_KV_CODEC_FN int KvScaleExponent(float amax, float code_max) {
  int e_amax = 0, e_max = 0;
  const float f_amax = frexpf(amax, &e_amax);
  const float f_max = frexpf(code_max, &e_max);
  const int k = e_amax - e_max + (f_amax > f_max ? 1 : 0);
  return k < -126 ? -126 : k;  // keeps 1/scale finite and the E8M0 byte >= 1
}

}  // namespace pagoda::kernels::internal
