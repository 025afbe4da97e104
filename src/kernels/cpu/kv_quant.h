// Scalar codecs of the scaled KV element types (kernels/cpu/ops.h KvType):
// OCP FP8 E4M3 and int8, and the power-of-two scale a head row needs. These
// define the stored values: StoreKvRowQuantized encodes with them and the
// attention reference decodes with them; the vector decoders inside the
// attention kernel are tested against Fp8E4M3ToFloat over all 256 codes.
// Pure functions; any thread.
#pragma once

#include <cstdint>

#include "kernels/cpu/ops.h"

namespace pagoda::kernels {

// OCP 8-bit floating point E4M3 (the "e4m3fn" variant of the OCP MX / OFP8
// spec): sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 holds
// subnormals m * 2^-9; no infinities; S.1111.111 (0x7f / 0xff) is NaN, so the
// largest finite value is 1.75 * 2^8 = 448.
inline constexpr float kFp8E4M3Max = 448.0f;
inline constexpr float kInt8Max = 127.0f;  // int8 codes are symmetric: [-127, 127]

// Exact decode of a code (NaN codes give a quiet NaN with the code's sign).
float Fp8E4M3ToFloat(uint8_t code);
// Round to nearest, ties to even mantissa; saturating: finite values beyond
// +-448 and infinities give +-448 (the OCP "saturating" conversion); NaN gives
// 0x7f with the input's sign. -0 gives 0x80.
uint8_t FloatToFp8E4M3(float x);
// Round to nearest even, clamped to [-127, 127]; NaN gives 0.
int8_t FloatToInt8(float x);

// Largest value a code of a scaled type reaches (448 for fp8, 127 for int8).
float KvCodeMax(KvType type);
// The smallest power of two s with amax <= KvCodeMax(type) * s (at least
// 2^-126), as an E8M0 byte (KvScaleValue); 0 (scale 0) for amax == 0. amax
// must be finite and >= 0 (callers clamp inf/NaN rows).
uint8_t KvScaleByte(KvType type, float amax);

}  // namespace pagoda::kernels
