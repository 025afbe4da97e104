// Branch-free float helpers shared by the ops, written so that GCC vectorizes
// loops that call them (no libm calls, no branches). Internal to kernels/cpu.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace pagoda::kernels::internal {

// e^x with ~2e-7 relative error for x in [-87, 88.3] (clamped outside); inputs below -87.3 give
// ~1e-38 (callers mask, they never rely on an exact 0).
[[gnu::always_inline]] inline float ExpApprox(float x) {
  x = std::min(std::max(x, -87.3f), 88.3f);
  const float t = x * 1.44269504088896341f;
  // Round to nearest with the 1.5*2^23 trick (no roundps needed at SSE2).
  const float n = (t + 12582912.0f) - 12582912.0f;
  const float f = t - n;  // [-0.5, 0.5]
  // 2^f, Taylor series of e^(f ln 2) to degree 7.
  float p = 1.5252734e-05f;
  p = p * f + 1.5403530e-04f;
  p = p * f + 1.3333558e-03f;
  p = p * f + 9.6181291e-03f;
  p = p * f + 5.5504109e-02f;
  p = p * f + 2.4022651e-01f;
  p = p * f + 6.9314718e-01f;
  p = p * f + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

[[gnu::always_inline]] inline float SiluApprox(float x) { return x / (1.0f + ExpApprox(-x)); }

// GELU in its tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// the one ggml_gelu computes (llama.cpp's bert FFN), written through
// 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)): no cancellation for negative x, so
// the relative error stays ExpApprox's.
[[gnu::always_inline]] inline float GeluApprox(float x) {
  constexpr float kTwoSqrt2OverPi = 1.59576912160573071175f;  // 2 sqrt(2/pi)
  const float u2 = kTwoSqrt2OverPi * x * (1.0f + 0.044715f * x * x);
  return x / (1.0f + ExpApprox(-u2));
}

}  // namespace pagoda::kernels::internal
