// Per-32-element Q8 rounding of activations for the AVX2 kernel files
// (matmul_avx2.cc, matmul_int8_avx2.cc; include it only from files built with
// the AVX2 flags): d = amax / 127, q = round(x / d) clamped to [-127, 127].
// Internal linkage, so code built with the AVX2 flags never merges with
// baseline code.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace pagoda::kernels::internal {
namespace {

// Rounds the 32 floats at x into qs[0..32) (element order); returns d and
// sets *sum to the sum of the 32 levels.
inline float QuantizeBlock32Avx2(const float* x, int8_t* qs, int32_t* sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i lim = _mm256_set1_epi32(127), nlim = _mm256_set1_epi32(-127);
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[i]));
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float d = _mm_cvtss_f32(m4) / 127.0f;
  const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    q[i] = _mm256_max_epi32(_mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(v[i], id)), lim), nlim);
  }
  const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
  // i32 -> i16 -> i8, then undo the lane interleave of the packs.
  __m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  p8 = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), p8);
  *sum = _mm_cvtsi128_si32(s4);
  return d;
}

}  // namespace
}  // namespace pagoda::kernels::internal
