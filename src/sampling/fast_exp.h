// FastExp: e^x in plain float arithmetic (Cody-Waite reduction and the
// Cephes expf polynomial, relative error < 1e-7), branch-free so that loops
// over a 150k-token row vectorise without ISA flags; libm's expf costs ~4 ns
// a call here, which made a full-vocabulary softmax most of a millisecond.
// Domain: x <= 88 (callers pass logit - max <= 0). x < -87 (results under
// FLT_MIN), -inf and NaN give 0.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace pagoda {

inline float FastExp(float x) {
  // n = round(x / ln2) by the 1.5 * 2^23 trick. No clamping (a select would
  // stop GCC from vectorising): out-of-range lanes are masked at the end,
  // and the integer part is unsigned so garbage there is still defined.
  const float kMagic = 12582912.0f;
  const float t = x * 1.44269504088896341f + kMagic;
  const float n = t - kMagic;
  const uint32_t ni = std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(kMagic);
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // x - n*ln2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((ni + 127u) << 23);  // 2^n
  const uint32_t keep = 0u - uint32_t(x >= -87.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(p * scale) & keep);
}

// Rows are summed in chunks of kExpChunk: each chunk in float with eight
// accumulators (no reassociation needed for speed), the chunks in double.
inline constexpr size_t kExpChunk = 512;

float ChunkSum(const float* w, size_t n);

// out[i] = FastExp((x[i] - shift) * scale) (scale > 0); returns their sum
// (chunked as above). out may be null when only the sum is wanted.
double ExpTerms(std::span<const float> x, float shift, float scale, float* out);

// The index i at which the running sum of w (chunked as in ExpTerms) first
// exceeds u, for u in [0, sum); the last non-zero term if rounding runs off
// the end. w must have a non-zero term.
size_t DrawIndex(std::span<const float> w, double u);

}  // namespace pagoda
