// Scalar fp16 / bf16 <-> fp32 conversions (IEEE, round to nearest even).
#pragma once

#include <cstdint>
#include <cstring>

namespace pagoda {

inline float F32FromBits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t BitsFromF32(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

inline float F16ToF32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  if (exp == 0) {
    if (man == 0) return F32FromBits(sign);
    // subnormal: man * 2^-24
    float f = (float)man * 5.9604644775390625e-08f;
    return sign ? -f : f;
  }
  if (exp == 31) return F32FromBits(sign | 0x7f800000u | (man << 13));
  return F32FromBits(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t F32ToF16(float f) {
  uint32_t x = BitsFromF32(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  x &= 0x7fffffff;
  if (x >= 0x7f800000u) {  // inf or nan
    return (uint16_t)(sign | 0x7c00 | (x > 0x7f800000u ? 0x200 : 0));
  }
  if (x >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);  // overflow -> inf
  if (x < 0x38800000u) {  // subnormal or zero in half
    // value * 2^24 rounded to nearest even
    float v = F32FromBits(x) * 16777216.0f;
    uint32_t m = (uint32_t)v;
    float rem = v - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) ++m;
    return (uint16_t)(sign | m);
  }
  uint32_t mant = x & 0x7fffff;
  uint32_t exp = (x >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // may carry into exp: correct
  return (uint16_t)(sign | h);
}

inline float BF16ToF32(uint16_t h) { return F32FromBits((uint32_t)h << 16); }

inline uint16_t F32ToBF16(float f) {
  uint32_t x = BitsFromF32(f);
  if ((x & 0x7fffffff) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);  // quiet nan
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

}  // namespace pagoda
