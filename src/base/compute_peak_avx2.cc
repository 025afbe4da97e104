#include <immintrin.h>

#include "base/compute_peak_internal.h"

namespace pagoda::internal {

float FmaLoopAvx2(int64_t iters) {
  // Ten chains: the FMA latency (4-5 cycles) times two pipes, with room.
  __m256 a[10];
  for (int i = 0; i < 10; ++i) a[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 10; ++i) a[i] = _mm256_fmadd_ps(a[i], m, c);
  }
  __m256 s = a[0];
  for (int i = 1; i < 10; ++i) s = _mm256_add_ps(s, a[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[7];
}

int32_t MaddubsLoopAvx2(int64_t iters) {
  __m256i a[10];
  for (int i = 0; i < 10; ++i) a[i] = _mm256_set1_epi16(static_cast<int16_t>(i));
  const __m256i w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(-2);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 10; ++i) a[i] = _mm256_add_epi16(a[i], _mm256_maddubs_epi16(w, x));
  }
  __m256i s = a[0];
  for (int i = 1; i < 10; ++i) s = _mm256_add_epi16(s, a[i]);
  return static_cast<int16_t>(_mm256_extract_epi16(s, 0)) + static_cast<int16_t>(_mm256_extract_epi16(s, 15));
}

}  // namespace pagoda::internal
