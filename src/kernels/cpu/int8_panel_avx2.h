// Pieces shared by the AVX2 int8 panel files (matmul_int8_avx2.cc for
// Q4_0/Q4_1/Q5_0/Q8_0, matmul_int8_kquant_avx2.cc for Q4_K/Q5_K/Q6_K):
// the per-32 Q8 activation layout, 8-row transposes and loads, prefetch of
// the next 8-row group, the zero-padded last group and the masked tile
// store. Include it only from files built with the AVX2 flags; internal
// linkage, so that code never merges with baseline code.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/matmul_tile_loop.h"
#include "kernels/cpu/q8_block_avx2.h"

namespace pagoda::kernels::internal {
namespace {

inline int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// ---------------------------------------------------------------- activations
//
// Per token, nb = n_in / 32: s8 qs[n_in], f32 d[nb], i32 sum[nb] (sum of q),
// f32 xs[nb] (d * sum); padded to 32 bytes.

inline int64_t ActBytes(int64_t n_in) { return RoundUp(n_in + n_in / 32 * 12, 32); }

// Writes qs, d, sum and xs (not the padding).
inline void ConvertQ8Blocks(const float* x, int64_t n_in, void* dst) {
  const int64_t nb = n_in / 32;
  int8_t* qs = static_cast<int8_t*>(dst);
  float* dv = reinterpret_cast<float*>(qs + n_in);
  int32_t* sums = reinterpret_cast<int32_t*>(dv + nb);
  float* xs = reinterpret_cast<float*>(sums + nb);
  for (int64_t b = 0; b < nb; ++b) {
    int32_t sum = 0;
    const float d = QuantizeBlock32Avx2(x + 32 * b, qs + 32 * b, &sum);
    dv[b] = d;
    sums[b] = sum;
    xs[b] = d * static_cast<float>(sum);
  }
}

inline void ConvertAct(const float* x, int64_t n_in, void* dst) {
  ConvertQ8Blocks(x, n_in, dst);
  const int64_t used = n_in + 12 * (n_in / 32);
  std::memset(static_cast<uint8_t*>(dst) + used, 0, ActBytes(n_in) - used);
}

inline __m256i Bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// ---------------------------------------------------------------- packing

// 8 rows' 16-byte vectors, row r in v[r % 4] half r / 4 -> vector q = dword q
// of rows 0..7 (4x4 dword transpose within each 128-bit half).
inline void Transpose4x2(const __m256i* v, __m256i* o) {
  const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
  o[0] = _mm256_unpacklo_epi64(t0, t2);
  o[1] = _mm256_unpackhi_epi64(t0, t2);
  o[2] = _mm256_unpacklo_epi64(t1, t3);
  o[3] = _mm256_unpackhi_epi64(t1, t3);
}

// 8 rows of 8 dwords -> vector q = dword q of rows 0..7.
inline void Transpose8x8(const __m256i* v, __m256i* o) {
  __m256i lo[4], hi[4];
  Transpose4x2(v, lo);      // rows 0..3: [d q | d q+4]
  Transpose4x2(v + 4, hi);  // rows 4..7
  for (int q = 0; q < 4; ++q) {
    o[q] = _mm256_permute2x128_si256(lo[q], hi[q], 0x20);
    o[q + 4] = _mm256_permute2x128_si256(lo[q], hi[q], 0x31);
  }
}

inline __m128i Load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// The fp16 scales at bytes 0-1 (and 2-3: Q4_1's mins) of the blocks at
// p + r * ws, r < 8, as f32: one dword load per row, then unpacks (cheaper
// than eight two-uop word inserts).
inline void Halves8(const uint8_t* p, int64_t ws, __m256* d, __m256* m) {
  __m128i x[8];
  for (int r = 0; r < 8; ++r) {
    int32_t v;
    std::memcpy(&v, p + r * ws, 4);
    x[r] = _mm_cvtsi32_si128(v);
  }
  // a[i] = (d_2i, d_2i+1, m_2i, m_2i+1); b = (d0..d3, m0..m3), (d4..d7, m4..m7).
  const __m128i a0 = _mm_unpacklo_epi16(x[0], x[1]), a1 = _mm_unpacklo_epi16(x[2], x[3]);
  const __m128i a2 = _mm_unpacklo_epi16(x[4], x[5]), a3 = _mm_unpacklo_epi16(x[6], x[7]);
  const __m128i b0 = _mm_unpacklo_epi32(a0, a1), b1 = _mm_unpacklo_epi32(a2, a3);
  *d = _mm256_cvtph_ps(_mm_unpacklo_epi64(b0, b1));
  if (m != nullptr) *m = _mm256_cvtph_ps(_mm_unpackhi_epi64(b0, b1));
}

// Eight interleaved row streams are more than the hardware prefetchers
// follow well. A group's rows are usually contiguous (ws = nb * kBytes), so
// block b prefetches its 1/nb share of the next group as one sequential
// stream: into L1 when two groups fit there (Q4_0 at 2048 columns: 2 x 9 KB;
// 1.3x faster decode than into L2), else into L2 (Q8_0 at 2048 columns:
// 2 x 17 KB; into L1 it was 1.6x slower).
inline bool NextGroupFitsL1(int64_t ws) { return 16 * ws <= 24 * 1024; }

template <int64_t kBytes>
inline void PrefetchNextGroup(const uint8_t* w, int64_t ws, int64_t b, bool to_l1) {
  const char* next = reinterpret_cast<const char*>(w + 8 * ws + 8 * kBytes * b);
  if (to_l1) {
    for (int64_t off = 0; off < 8 * kBytes; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
  } else {
    for (int64_t off = 0; off < 8 * kBytes; off += 64) _mm_prefetch(next + off, _MM_HINT_T1);
  }
}

// A panel of rows [0, n_rows): pack_group(rows, stride, out) for each group of
// 8 rows, group_bytes apart; a partial last group reads a PadGroup copy.
template <class PackGroupFn>
inline void PackGroupsOf8(const uint8_t* w, int64_t ws, int64_t n_rows, int64_t raw_row_bytes, int64_t group_bytes,
                          void* dst, PackGroupFn pack_group) {
  uint8_t* o = static_cast<uint8_t*>(dst);
  int64_t r0 = 0;
  for (; r0 + 8 <= n_rows; r0 += 8, o += group_bytes) pack_group(w + r0 * ws, ws, o);
  if (r0 < n_rows) {
    const std::vector<uint8_t> pad = PadGroup<8>(w, ws, r0, n_rows, raw_row_bytes);
    pack_group(pad.data(), raw_row_bytes, o);
  }
}

// ---------------------------------------------------------------- compute

// Stores the valid rows (rows_left - 8 g of group g, at most 8) of acc.
template <int G, int T>
inline void StoreTile(const __m256 (&acc)[G][T], int64_t rows_left, float* y, int64_t ldy) {
  for (int g = 0; g < G; ++g) {
    const int64_t valid = std::clamp<int64_t>(rows_left - 8 * g, 0, 8);
    if (valid == 8) {
      for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy + 8 * g, acc[g][t]);
    } else {
      const __m256i mask =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(valid)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      for (int t = 0; t < T; ++t) _mm256_maskstore_ps(y + t * ldy + 8 * g, mask, acc[g][t]);
    }
  }
}

// Lane r of the result: the sum of the 8 lanes of v[r] (8 rows' partial
// dot products -> one vector of row sums; exact integer adds).
inline __m256i ReduceRows8(const __m256i* v) {
  const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
  const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20), _mm256_permute2x128_si256(h0, h1, 0x31));
}

}  // namespace
}  // namespace pagoda::kernels::internal
