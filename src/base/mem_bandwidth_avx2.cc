#include <immintrin.h>

#include "base/mem_bandwidth_internal.h"

namespace pagoda::internal {

uint64_t SumLinesAvx2(const uint8_t* p, int64_t n_lines) {
  // Four independent accumulators (two lines per iteration) keep enough loads
  // in flight; the adds cost nothing next to the DRAM stream.
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 2 <= n_lines; i += 2) {
    const auto* q = reinterpret_cast<const __m256i*>(p + i * 64);
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(q));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(q + 1));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(q + 2));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(q + 3));
  }
  for (; i < n_lines; ++i) {
    const auto* q = reinterpret_cast<const __m256i*>(p + i * 64);
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(q));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(q + 1));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  alignas(32) uint64_t w[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(w), s);
  return w[0] + w[1] + w[2] + w[3];
}

}  // namespace pagoda::internal
