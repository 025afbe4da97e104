// Pieces shared by the AVX-512 VNNI int8 files (matmul_int8_avx512.cc: the
// panel and pre-packed Q4_0; matmul_int8_fused_avx512.cc: the fused small-
// batch kernels): the per-32 Q8 activation rounding, the signed activation
// layout and the gather of 16 rows' fp16 scales. Include it only from files
// built with the AVX-512 flags; internal linkage, so that code never merges
// with code built for another ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace pagoda::kernels::internal {
namespace {

inline int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// Rounds the 32 values at x to q = round(x / d), d = amax / 127 (|q| <= 127),
// in two vectors of 16 int32; returns d. The same rounding as the AVX2
// activations (q8_block_avx2.h), so both ISAs' int8 kernels see the same q.
inline float QuantBlock32(const float* x, __m512i* i0, __m512i* i1) {
  const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
  const float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
  const float d = m / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
  *i0 = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x0, id)), hi), lo);
  *i1 = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(x1, id)), hi), lo);
  return d;
}

// Signed activations, for kernels whose weights are the unsigned operand of
// vpdpbusd (pre-packed Q4_0, the fused kernels), per token with nb = n_in / 32:
//   s8 q[n_in], f32 d[nb], i32 sum[nb] (sum of q over the block),
//   f32 xs[nb] (d * sum, as the panel's ConvertU8 computes it),
//   i32 half[2 nb] (the sums of q over elements 0-15 and 16-31 of each block)
// padded to 64 bytes.
inline int64_t S8ActBytes(int64_t n_in) { return RoundUp(n_in + n_in / 32 * 20, 64); }

inline void ConvertS8(const float* x, int64_t n_in, void* dst) {
  int8_t* qs = static_cast<int8_t*>(dst);
  const int64_t nb = n_in / 32;
  float* dv = reinterpret_cast<float*>(qs + n_in);
  int32_t* sums = reinterpret_cast<int32_t*>(dv + nb);
  float* xs = reinterpret_cast<float*>(sums + nb);
  int32_t* half = reinterpret_cast<int32_t*>(xs + nb);
  for (int64_t b = 0; b < nb; ++b) {
    __m512i i0, i1;
    const float d = QuantBlock32(x + 32 * b, &i0, &i1);
    half[2 * b] = _mm512_reduce_add_epi32(i0);
    half[2 * b + 1] = _mm512_reduce_add_epi32(i1);
    const int sum = half[2 * b] + half[2 * b + 1];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b), _mm512_cvtepi32_epi8(i0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b + 16), _mm512_cvtepi32_epi8(i1));
    dv[b] = d;
    sums[b] = sum;
    xs[b] = d * static_cast<float>(sum);
  }
  std::memset(qs + n_in + 20 * nb, 0, S8ActBytes(n_in) - n_in - 20 * nb);
}

// The dwords at p + r * ws, r < 16, one per lane (reads 4 bytes of each row).
inline __m512i GatherRows16(const uint8_t* p, int64_t ws) {
  const __m512i off = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                         _mm512_set1_epi32(static_cast<int>(ws)));
  return _mm512_i32gather_epi32(off, p, 1);
}

// fp16 in the low (high) half of each dword lane -> f32.
inline __m512 LowHalves(__m512i v) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v)); }
inline __m512 HighHalves(__m512i v) { return LowHalves(_mm512_srli_epi32(v, 16)); }

// The fp16 scales at byte 0 of the blocks at p + r * ws, r < 16.
inline __m512 GatherScales(const uint8_t* p, int64_t ws) { return LowHalves(GatherRows16(p, ws)); }

}  // namespace
}  // namespace pagoda::kernels::internal
