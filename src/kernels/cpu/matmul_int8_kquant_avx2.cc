// AVX2 int8 panel for the K-quants (Q4_K, Q5_K, Q6_K): the K-quant twin of
// matmul_int8_avx2.cc (8 rows per ymm, vpmaddubsw + vpmaddwd with the
// unsigned weight level as the u8 operand, activations signed), for
// prefill and batched decode, plus a fused kernel of the same integer sums
// and f32 fold for small batches (decode), reading the weight rows directly.
//
// Activations: the per-32 Q8 layout of int8_panel_avx2.h (s8 qs, f32 d, i32
// sum, f32 xs per 32-block) followed by, per 16-element half h of block b,
// one dword of two i16 c[2b+h] = 32 * (sum of q over the half's bytes
// 4i, 4i+1 | 4i+2, 4i+3): the Q6_K offset, see below. Error: activation
// rounding only, |dx| <= amax_blk / 254 with 32-element blocks (tighter than
// the per-256 rounding of the q8k GEMV).
//
// Panel, per 8-row group, units in element order (rows in dword lanes,
// vector q of a unit = bytes [4q, 4q+4) of the unit's 32 level bytes of the
// 8 rows):
//   Q4_K: unit = 64 elements (a sub-block pair): 8 vectors of the raw qs
//         bytes (low nibble: sub-block 2c, high: 2c+1), f32 dw[2][8]
//         (d * sc_j), f32 mw[2][8] (-dmin * m_j). 384 bytes.
//   Q5_K: unit = 32 elements: 8 vectors of levels 0..31, dw[8], mw[8]. 320.
//   Q6_K: unit = 32 elements: 8 vectors of levels 0..63, two i16 scale
//         vectors (sc_j, sc_j) per row for its sub-blocks j = 2b, 2b+1,
//         f32 d[8]. 352 bytes.
//
// Integer block sums, exact (so the order of adds does not matter), i16
// bounds as matmul_int8_avx2.cc:
//   Q4_K: nibble u <= 15, eight vpmaddubsw add up in i16 (16 products:
//         16 * 15 * 127 = 30480 < 32767), one vpmaddwd by ones.
//   Q5_K: u <= 31, four add up in i16 (8 * 31 * 127 = 31496).
//   Q6_K: u <= 63 (one vpmaddubsw: 2 * 63 * 127 = 16002, no saturation);
//         four add up in i16 *wrapping*, minus c (32 * the activation pair
//         sums), which leaves sum (u - 32) * q per lane, |.| <= 8 * 32 * 127
//         = 32512: exact. Then vpmaddwd by (sc_j, sc_j) and the two
//         sub-blocks of the 32-block add in i32: isum = sum_j sc_j * sum_k
//         (u_k - 32) q_k, |isum| < 2^24.
// f32 fold per 32-block b, the same in every kernel here:
//   Q4_K/Q5_K: acc = fma(float(isum_b), dw_b * dx_b, acc); acc = fma(mw_b, xs_b, acc)
//   Q6_K:      acc = fma(float(isum_b), d * dx_b, acc)
// so outputs do not depend on n_tokens, the kernel or the tile position,
// bitwise. Explicit fma / mul intrinsics only (-ffp-contract cannot change
// it).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/int8_panel_avx2.h"
#include "kernels/cpu/kquant_scales.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/matmul_tile_loop.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

// ---------------------------------------------------------------- activations

int64_t ActBytesK(int64_t n_in) { return RoundUp(n_in + n_in / 32 * 20, 32); }

inline const int8_t* ActC(const int8_t* a, int64_t n_in) { return a + n_in + 12 * (n_in / 32); }

void ConvertActK(const float* x, int64_t n_in, void* dst) {
  ConvertQ8Blocks(x, n_in, dst);
  const int64_t nb = n_in / 32;
  const int8_t* qs = static_cast<const int8_t*>(dst);
  int16_t* c = reinterpret_cast<int16_t*>(static_cast<uint8_t*>(dst) + n_in + 12 * nb);
  for (int64_t h = 0; h < 2 * nb; ++h) {
    int s0 = 0, s1 = 0;
    for (int i = 0; i < 4; ++i) {
      const int8_t* p = qs + 16 * h + 4 * i;
      s0 += p[0] + p[1];
      s1 += p[2] + p[3];
    }
    c[2 * h] = static_cast<int16_t>(32 * s0);  // |.| <= 32 * 8 * 127 = 32512
    c[2 * h + 1] = static_cast<int16_t>(32 * s1);
  }
  const int64_t used = n_in + 20 * nb;
  std::memset(static_cast<uint8_t*>(dst) + used, 0, ActBytesK(n_in) - used);
}

// ---------------------------------------------------------------- types

template <DType kType>
struct Traits;

template <>
struct Traits<DType::kQ4_K> {
  using Block = BlockQ4_K;
  static constexpr int kUnitElems = 64;
  static constexpr int64_t kUnitBytes = 384, kDw = 256, kMw = 320;
  static constexpr int64_t kPanelMinTokens = 16;  // panel / fused: 0.75x at 4, 0.96x at 8, 1.37x at 16
};
template <>
struct Traits<DType::kQ5_K> {
  using Block = BlockQ5_K;
  static constexpr int kUnitElems = 32;
  static constexpr int64_t kUnitBytes = 320, kDw = 256, kMw = 288;
  static constexpr int64_t kPanelMinTokens = 8;  // panel / fused: 1.00x at 4, 1.37x at 8, 1.36x at 16
};
template <>
struct Traits<DType::kQ6_K> {
  using Block = BlockQ6_K;
  static constexpr int kUnitElems = 32;
  static constexpr int64_t kUnitBytes = 352, kSc = 256, kDw = 320;
  static constexpr int64_t kPanelMinTokens = 4;  // panel / fused: 1.26x at 4, 1.29x at 8, 1.71x at 16
};

template <DType kType>
constexpr int64_t kBlockBytes = sizeof(typename Traits<kType>::Block);
template <DType kType>
constexpr int kUnitsPerSuper = 256 / Traits<kType>::kUnitElems;

template <DType kType>
int64_t PanelRowBytes(int64_t n_in) {
  return n_in / Traits<kType>::kUnitElems * Traits<kType>::kUnitBytes / 8;
}

template <DType kType>
int64_t RawRowBytes(int64_t n_in) {
  return n_in / kQK_K * kBlockBytes<kType>;
}

// ---------------------------------------------------------------- packing

inline __m256i Load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void Store32(uint8_t* p, __m256i v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), v); }

// 8 rows' 32-byte vectors v[r] -> the unit's 8 vectors at o.
inline void StoreTransposed(const __m256i* v, uint8_t* o) {
  __m256i q[8];
  Transpose8x8(v, q);
  for (int i = 0; i < 8; ++i) Store32(o + 32 * i, q[i]);
}

// Q4_K/Q5_K super-blocks of 8 rows (p + r * ws): dw[j] = d * sc_j and
// mw[j] = -dmin * m_j of sub-block j, rows in lanes.
inline void K4Scales(const uint8_t* p, int64_t ws, __m256* dw, __m256* mw) {
  __m256 d, dmin;
  Halves8(p, ws, &d, &dmin);
  const __m256 ndmin = _mm256_sub_ps(_mm256_setzero_ps(), dmin);
  __m256i vs[8], vm[8], ts[8], tm[8];
  for (int r = 0; r < 8; ++r) {
    uint64_t sc, m;
    ScalesMinsK4(p + r * ws + 4, &sc, &m);
    vs[r] = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(sc)));
    vm[r] = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(m)));
  }
  Transpose8x8(vs, ts);
  Transpose8x8(vm, tm);
  for (int j = 0; j < 8; ++j) {
    dw[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(ts[j]), d);
    mw[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(tm[j]), ndmin);
  }
}

// One super-block of 8 rows (p + r * ws) -> its units at o.
template <DType kType>
inline void PackSuper(const uint8_t* p, int64_t ws, uint8_t* o);

template <>
inline void PackSuper<DType::kQ4_K>(const uint8_t* p, int64_t ws, uint8_t* o) {
  using Tr = Traits<DType::kQ4_K>;
  for (int c = 0; c < 4; ++c) {
    __m256i v[8];
    for (int r = 0; r < 8; ++r) v[r] = Load32(p + r * ws + offsetof(BlockQ4_K, qs) + 32 * c);
    StoreTransposed(v, o + Tr::kUnitBytes * c);
  }
  __m256 dw[8], mw[8];
  K4Scales(p, ws, dw, mw);
  for (int j = 0; j < 8; ++j) {
    uint8_t* u = o + Tr::kUnitBytes * (j / 2) + 32 * (j % 2);
    _mm256_store_ps(reinterpret_cast<float*>(u + Tr::kDw), dw[j]);
    _mm256_store_ps(reinterpret_cast<float*>(u + Tr::kMw), mw[j]);
  }
}

template <>
inline void PackSuper<DType::kQ5_K>(const uint8_t* p, int64_t ws, uint8_t* o) {
  using Tr = Traits<DType::kQ5_K>;
  const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
  for (int c = 0; c < 4; ++c) {
    __m256i lo[8], hi[8];
    for (int r = 0; r < 8; ++r) {
      const __m256i v = Load32(p + r * ws + offsetof(BlockQ5_K, qs) + 32 * c);
      const __m256i qh = Load32(p + r * ws + offsetof(BlockQ5_K, qh));
      // Bit 2c (2c + 1) of qh[k] is the fifth bit of element k of sub-block 2c (2c + 1).
      const __m256i hl = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), one);
      const __m256i hh = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), one);
      lo[r] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_slli_epi16(hl, 4));
      hi[r] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), _mm256_slli_epi16(hh, 4));
    }
    StoreTransposed(lo, o + Tr::kUnitBytes * (2 * c));
    StoreTransposed(hi, o + Tr::kUnitBytes * (2 * c + 1));
  }
  __m256 dw[8], mw[8];
  K4Scales(p, ws, dw, mw);
  for (int j = 0; j < 8; ++j) {
    _mm256_store_ps(reinterpret_cast<float*>(o + Tr::kUnitBytes * j + Tr::kDw), dw[j]);
    _mm256_store_ps(reinterpret_cast<float*>(o + Tr::kUnitBytes * j + Tr::kMw), mw[j]);
  }
}

// Q6_K half n of a row, l < 32: ql[64n + l], ql[64n + 32 + l] low nibbles
// -> elements l, 32 + l; high nibbles -> 64 + l, 96 + l; bit pairs 0,1 /
// 2,3 / 4,5 / 6,7 of qh[32n + l] are their bits 4-5 (blocks.h).
inline void Q6Levels(const uint8_t* b, int n, __m256i* q) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  const __m256i l0 = Load32(b + offsetof(BlockQ6_K, ql) + 64 * n);
  const __m256i l1 = Load32(b + offsetof(BlockQ6_K, ql) + 64 * n + 32);
  const __m256i h = Load32(b + offsetof(BlockQ6_K, qh) + 32 * n);
  q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
  q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
  q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m30));
  q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                         _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}

// Eight sign-extended scales -> dwords (sc, sc) of two i16.
inline __m256i DupScales(__m128i s8) {
  const __m256i x = _mm256_cvtepi8_epi32(s8);
  return _mm256_or_si256(_mm256_and_si256(x, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(x, 16));
}

template <>
inline void PackSuper<DType::kQ6_K>(const uint8_t* p, int64_t ws, uint8_t* o) {
  using Tr = Traits<DType::kQ6_K>;
  for (int n = 0; n < 2; ++n) {
    __m256i lv[4][8];
    for (int r = 0; r < 8; ++r) {
      __m256i q[4];
      Q6Levels(p + r * ws, n, q);
      for (int g = 0; g < 4; ++g) lv[g][r] = q[g];
    }
    for (int g = 0; g < 4; ++g) StoreTransposed(lv[g], o + Tr::kUnitBytes * (4 * n + g));
  }
  __m256i s0[8], s1[8], t0[8], t1[8];
  for (int r = 0; r < 8; ++r) {
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + r * ws + offsetof(BlockQ6_K, scales)));
    s0[r] = DupScales(s);
    s1[r] = DupScales(_mm_srli_si128(s, 8));
  }
  Transpose8x8(s0, t0);  // t0[j]: sub-block j < 8 of the 8 rows
  Transpose8x8(s1, t1);  // t1[j]: sub-block 8 + j
  // d sits at bytes 208-209 of the 210: read the dword at 206 (the last two
  // scales, then d), so nothing past the block is touched.
  __m256 unused, d;
  Halves8(p + offsetof(BlockQ6_K, d) - 2, ws, &unused, &d);
  for (int u = 0; u < 8; ++u) {
    const __m256i* t = u < 4 ? t0 : t1;
    uint8_t* o_u = o + Tr::kUnitBytes * u;
    Store32(o_u + Tr::kSc, t[2 * (u % 4)]);
    Store32(o_u + Tr::kSc + 32, t[2 * (u % 4) + 1]);
    _mm256_store_ps(reinterpret_cast<float*>(o_u + Tr::kDw), d);
  }
}

// Panel of rows [0, n_rows): groups of 8 rows, per group the units in order.
template <DType kType>
void PackGroupK(const uint8_t* w, int64_t ws, int64_t n_super, uint8_t* o) {
  constexpr int64_t kSuperBytes = Traits<kType>::kUnitBytes * kUnitsPerSuper<kType>;
  const bool to_l1 = NextGroupFitsL1(ws);
  for (int64_t i = 0; i < n_super; ++i) {
    PrefetchNextGroup<kBlockBytes<kType>>(w, ws, i, to_l1);
    PackSuper<kType>(w + i * kBlockBytes<kType>, ws, o + i * kSuperBytes);
  }
}

template <DType kType>
void PackPanelK(DType, const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, void* dst) {
  const int64_t n_super = n_in / kQK_K;
  PackGroupsOf8(w, ws, n_rows, RawRowBytes<kType>(n_in), 8 * PanelRowBytes<kType>(n_in), dst,
                [n_super](const uint8_t* g, int64_t gs, uint8_t* o) { PackGroupK<kType>(g, gs, n_super, o); });
}

// ---------------------------------------------------------------- compute

// The f32 fold of 32-block b (see the header): s[g][t] the exact integer
// sums of G groups x T tokens, dw (mw) the rows' scales (mins).
template <bool kMin, int G, int T>
inline void Fold(const __m256i (&s)[G][T], const __m256* dw, const __m256* mw, const int8_t* const* a, int64_t b,
                 int64_t nb, int64_t n_in, __m256 (&acc)[G][T]) {
  for (int t = 0; t < T; ++t) {
    const float* dv = reinterpret_cast<const float*>(a[t] + n_in);
    const __m256 dx = _mm256_set1_ps(dv[b]);
    for (int g = 0; g < G; ++g) {
      acc[g][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[g][t]), _mm256_mul_ps(dw[g], dx), acc[g][t]);
    }
    if constexpr (kMin) {
      const __m256 xs = _mm256_set1_ps(dv[2 * nb + b]);
      for (int g = 0; g < G; ++g) acc[g][t] = _mm256_fmadd_ps(mw[g], xs, acc[g][t]);
    }
  }
}

template <int G>
inline void LoadF(const uint8_t* blk, int64_t gs, int64_t off, __m256* v) {
  for (int g = 0; g < G; ++g) v[g] = _mm256_load_ps(reinterpret_cast<const float*>(blk + g * gs + off));
}

template <int G, int T>
inline void Widen(const __m256i (&s16)[G][T], __m256i (&s)[G][T]) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int g = 0; g < G; ++g)
    for (int t = 0; t < T; ++t) s[g][t] = _mm256_madd_epi16(s16[g][t], ones);
}

// i16 sums over level vectors [q0, q1) of a unit (shift: 4 takes the high
// nibbles of Q4_K's bytes, 0 the low; -1: the bytes are the levels) against
// the activation bytes at a[t] + off + 4q.
template <int G, int T>
inline void SumLevels(const uint8_t* blk, int64_t gs, int q0, int q1, int shift, const int8_t* const* a, int64_t off,
                      __m256i (&s16)[G][T]) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int g = 0; g < G; ++g)
    for (int t = 0; t < T; ++t) s16[g][t] = _mm256_setzero_si256();
  // Rolled: unrolled, GCC hoists every product and spills the tile.
#pragma GCC unroll 1
  for (int q = q0; q < q1; ++q) {
    __m256i wv[G];
    for (int g = 0; g < G; ++g) {
      wv[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + g * gs + 32 * q));
      if (shift == 4) wv[g] = _mm256_srli_epi16(wv[g], 4);
      if (shift >= 0) wv[g] = _mm256_and_si256(wv[g], m4);
    }
    for (int t = 0; t < T; ++t) {
      const __m256i av = Bcast4(a[t] + off + 4 * q);
      for (int g = 0; g < G; ++g) s16[g][t] = _mm256_add_epi16(s16[g][t], _mm256_maddubs_epi16(wv[g], av));
    }
  }
}

// Unit u of G groups (group g's unit at blk + g * gs) against T tokens,
// folded into acc[g][t].
template <DType kType, int G, int T>
inline void UnitStep(const uint8_t* blk, int64_t gs, const int8_t* const* a, int64_t u, int64_t nb, int64_t n_in,
                     __m256 (&acc)[G][T]) {
  using Tr = Traits<kType>;
  __m256i s16[G][T], s[G][T];
  __m256 dw[G], mw[G];
  if constexpr (kType == DType::kQ4_K) {
    for (int h = 0; h < 2; ++h) {  // sub-blocks 2u (low nibbles), 2u + 1 (high)
      const int64_t b = 2 * u + h;
      SumLevels<G, T>(blk, gs, 0, 8, 4 * h, a, 32 * b, s16);
      Widen(s16, s);
      LoadF<G>(blk, gs, Tr::kDw + 32 * h, dw);
      LoadF<G>(blk, gs, Tr::kMw + 32 * h, mw);
      Fold<true>(s, dw, mw, a, b, nb, n_in, acc);
    }
  } else if constexpr (kType == DType::kQ5_K) {
    __m256i s2[G][T];
    SumLevels<G, T>(blk, gs, 0, 4, -1, a, 32 * u, s16);
    Widen(s16, s);
    SumLevels<G, T>(blk, gs, 4, 8, -1, a, 32 * u, s16);
    Widen(s16, s2);
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t) s[g][t] = _mm256_add_epi32(s[g][t], s2[g][t]);
    LoadF<G>(blk, gs, Tr::kDw, dw);
    LoadF<G>(blk, gs, Tr::kMw, mw);
    Fold<true>(s, dw, mw, a, u, nb, n_in, acc);
  } else {
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t) s[g][t] = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {  // sub-blocks 2u, 2u + 1 (16 elements each)
      SumLevels<G, T>(blk, gs, 4 * h, 4 * h + 4, -1, a, 32 * u, s16);
      __m256i sc[G];
      for (int g = 0; g < G; ++g) sc[g] = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk + g * gs + Tr::kSc + 32 * h));
      for (int t = 0; t < T; ++t) {
        const __m256i c = Bcast4(ActC(a[t], n_in) + 4 * (2 * u + h));
        for (int g = 0; g < G; ++g) {
          s[g][t] = _mm256_add_epi32(s[g][t], _mm256_madd_epi16(_mm256_sub_epi16(s16[g][t], c), sc[g]));
        }
      }
    }
    LoadF<G>(blk, gs, Tr::kDw, dw);
    Fold<false>(s, dw, dw, a, u, nb, n_in, acc);
  }
}

// Over the panel: register tile of G groups x T tokens.
template <DType kType>
struct PanelKernel {
  template <int G, int T>
  static void Run(const uint8_t* p, int64_t gs, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    const int64_t nb = n_in / 32, n_units = n_in / Traits<kType>::kUnitElems;
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(act + t * as);
    __m256 acc[G][T];
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t) acc[g][t] = _mm256_setzero_ps();
    for (int64_t u = 0; u < n_units; ++u) {
      UnitStep<kType, G, T>(p + u * Traits<kType>::kUnitBytes, gs, a, u, nb, n_in, acc);
    }
    StoreTile<G, T>(acc, rows_left, y, ldy);
  }
};

// ---------------------------------------------------------------- pre-packed Q4_K
//
// Decode reads every weight byte once per token, so the per-call panel's f32
// scales (0.75 B per weight against the checkpoint's 0.5625) would cost more
// bandwidth than the panel saves compute. The load-time copy
// (PackedWeightStore) keeps, per 8-row group and super-block, the panel's
// four units of level bytes (1024 B) and one scale record of 192 B:
//   f32 d[8] and f32 -dmin[8] (rows in lanes; f16 widened exactly),
//   u8 sc[8][8] and u8 m[8][8] (sub-block j, then row)
// 1216 B per 2048 weights (0.594 B per weight, 1.056x the checkpoint). The
// kernel widens sc and m with the same conversions and multiplies as
// K4Scales, so dw and mw, and with them every output, are bitwise the
// panel's and the fused kernel's.
constexpr int64_t kQ4KPackedLevels = 4 * 256, kQ4KPackedRecord = 192;
constexpr int64_t kQ4KPackedSuper = kQ4KPackedLevels + kQ4KPackedRecord;
constexpr int64_t kPackedPrefetchAhead = 1536;  // bytes, as the Q4_0 packed kernel (0-6000 measured alike)

int64_t Q4KPackedRowStride(int64_t n_in) { return n_in / kQK_K * kQ4KPackedSuper / 8; }

void PackQ4KGroup(const uint8_t* w, int64_t ws, int64_t n_super, uint8_t* o) {
  const bool to_l1 = NextGroupFitsL1(ws);
  for (int64_t i = 0; i < n_super; ++i, o += kQ4KPackedSuper) {
    const uint8_t* p = w + i * kBlockBytes<DType::kQ4_K>;
    PrefetchNextGroup<kBlockBytes<DType::kQ4_K>>(w, ws, i, to_l1);
    for (int c = 0; c < 4; ++c) {
      __m256i v[8];
      for (int r = 0; r < 8; ++r) v[r] = Load32(p + r * ws + offsetof(BlockQ4_K, qs) + 32 * c);
      StoreTransposed(v, o + 256 * c);
    }
    uint8_t* rec = o + kQ4KPackedLevels;
    __m256 d, dmin;
    Halves8(p, ws, &d, &dmin);
    _mm256_store_ps(reinterpret_cast<float*>(rec), d);
    _mm256_store_ps(reinterpret_cast<float*>(rec + 32), _mm256_sub_ps(_mm256_setzero_ps(), dmin));
    for (int r = 0; r < 8; ++r) {
      uint64_t sc, m;
      ScalesMinsK4(p + r * ws + 4, &sc, &m);
      for (int j = 0; j < 8; ++j) {
        rec[64 + 8 * j + r] = static_cast<uint8_t>(sc >> (8 * j));
        rec[128 + 8 * j + r] = static_cast<uint8_t>(m >> (8 * j));
      }
    }
  }
}

// Rows [0, n_rows), n_rows <= 8: one group (a partial one reads a padded copy).
void PackQ4KRows(const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, uint8_t* dst) {
  const int64_t n_super = n_in / kQK_K;
  PackGroupsOf8(w, ws, n_rows, RawRowBytes<DType::kQ4_K>(n_in), 8 * Q4KPackedRowStride(n_in), dst,
                [n_super](const uint8_t* g, int64_t gs, uint8_t* o) { PackQ4KGroup(g, gs, n_super, o); });
}

inline __m256 WidenU8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Over the packed copy: register tile of G groups x T tokens.
struct PackedQ4KKernel {
  template <int G, int T>
  static void Run(const uint8_t* p, int64_t gs, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    const int64_t nb = n_in / 32, n_super = n_in / kQK_K;
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(act + t * as);
    __m256 acc[G][T];
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t) acc[g][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n_super; ++i) {
      const uint8_t* sp = p + i * kQ4KPackedSuper;
      if constexpr (G == 1) {
        const char* f = reinterpret_cast<const char*>(sp + kPackedPrefetchAhead);
        for (int64_t o = 0; o < kQ4KPackedSuper; o += 64) _mm_prefetch(f + o, _MM_HINT_T0);
      }
      __m256 d[G], ndmin[G];
      LoadF<G>(sp, gs, kQ4KPackedLevels, d);
      LoadF<G>(sp, gs, kQ4KPackedLevels + 32, ndmin);
      for (int j = 0; j < 8; ++j) {  // sub-block j: unit j / 2, low nibbles when j is even
        const int64_t b = 8 * i + j;
        __m256i s16[G][T], s[G][T];
        SumLevels<G, T>(sp + 256 * (j / 2), gs, 0, 8, 4 * (j % 2), a, 32 * b, s16);
        Widen(s16, s);
        __m256 dw[G], mw[G];
        for (int g = 0; g < G; ++g) {
          const uint8_t* rec = sp + g * gs + kQ4KPackedLevels;
          dw[g] = _mm256_mul_ps(WidenU8(rec + 64 + 8 * j), d[g]);
          mw[g] = _mm256_mul_ps(WidenU8(rec + 128 + 8 * j), ndmin[g]);
        }
        Fold<true>(s, dw, mw, a, b, nb, n_in, acc);
      }
    }
    StoreTile<G, T>(acc, rows_left, y, ldy);
  }
};

template <int kG, int kT>
void ComputePackedQ4K(const uint8_t* p, int64_t ps, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                      int64_t n_in, float* y, int64_t ldy) {
  GroupTileLoop<PackedQ4KKernel, 8, kG, kT>(p, ps, n_rows, act, as, n_tok, n_in, y, ldy);
}

// The 32 levels of 32-block k (< 8) of a row's super-block b, element order.
template <DType kType>
inline __m256i RowLevels(const uint8_t* b, int k) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  if constexpr (kType == DType::kQ6_K) {
    const int n = k / 4, g = k % 4;
    const __m256i l = Load32(b + offsetof(BlockQ6_K, ql) + 64 * n + 32 * (g & 1));
    const __m256i h = Load32(b + offsetof(BlockQ6_K, qh) + 32 * n);
    const __m256i lo = _mm256_and_si256(g < 2 ? l : _mm256_srli_epi16(l, 4), m4);
    // Bits 2g, 2g + 1 of qh -> bits 4-5.
    const __m256i hs = g == 0 ? _mm256_slli_epi16(h, 4) : g == 1 ? _mm256_slli_epi16(h, 2)
                                                    : g == 2 ? h : _mm256_srli_epi16(h, 2);
    return _mm256_or_si256(lo, _mm256_and_si256(hs, _mm256_set1_epi8(0x30)));
  } else {
    constexpr int64_t kQs = kType == DType::kQ4_K ? offsetof(BlockQ4_K, qs) : offsetof(BlockQ5_K, qs);
    const __m256i v = Load32(b + kQs + 32 * (k / 2));
    __m256i u = _mm256_and_si256(k % 2 == 0 ? v : _mm256_srli_epi16(v, 4), m4);
    if constexpr (kType == DType::kQ5_K) {
      const __m256i qh = Load32(b + offsetof(BlockQ5_K, qh));
      const __m256i hb = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(k)), _mm256_set1_epi8(1));
      u = _mm256_or_si256(u, _mm256_slli_epi16(hb, 4));
    }
    return u;
  }
}

// Decode: straight from the weight rows without a transpose. Each row's
// 32-block is multiplied in element order and the 8 rows' partial sums are
// reduced to one vector of row sums (ReduceRows8). The integer block sums
// are exactly the panel's (Q6_K: the offset 32 * q taken off each i16 pair,
// then vpmaddwd by the sub-block scale of each 128-bit half), and Fold is
// shared, so the results are bitwise PanelKernel's; no per-block repack.
template <DType kType>
struct FusedRowsKernel {
  template <int G, int T>
  static void Run(const uint8_t* w, int64_t ws, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    static_assert(G == 1);
    constexpr bool kQ6 = kType == DType::kQ6_K;
    const int64_t nb = n_in / 32, n_super = n_in / kQK_K;
    const __m256i ones = _mm256_set1_epi16(1), k32 = _mm256_set1_epi8(32);
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(act + t * as);
    __m256 acc[1][T];
    for (int t = 0; t < T; ++t) acc[0][t] = _mm256_setzero_ps();
    // Into L2 even where two groups fit L1 (into L1: 0.61x the q8k GEMV at
    // one token, into L2: 0.71x; none: 0.36x; Q4_K 8192x2048, thread CPU time).
    for (int64_t i = 0; i < n_super; ++i) {
      const uint8_t* p = w + i * kBlockBytes<kType>;
      PrefetchNextGroup<kBlockBytes<kType>>(w, ws, i, /*to_l1=*/false);
      __m256 dw[8], mw[8];
      __m256i sc[2][8];  // Q6_K: dwords (sc_j, sc_j) of each row, j < 8 | j >= 8
      if constexpr (kQ6) {
        __m256 unused;
        Halves8(p + offsetof(BlockQ6_K, d) - 2, ws, &unused, &dw[0]);
        for (int r = 0; r < 8; ++r) {
          const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + r * ws + offsetof(BlockQ6_K, scales)));
          sc[0][r] = DupScales(s);
          sc[1][r] = DupScales(_mm_srli_si128(s, 8));
        }
      } else {
        K4Scales(p, ws, dw, mw);
      }
      for (int k = 0; k < 8; ++k) {
        const int64_t b = 8 * i + k;
        __m256i lv[8], sk[8];
        for (int r = 0; r < 8; ++r) lv[r] = RowLevels<kType>(p + r * ws, k);
        if constexpr (kQ6) {
          const int j = 2 * (k % 4);
          const __m256i idx = _mm256_setr_epi32(j, j, j, j, j + 1, j + 1, j + 1, j + 1);
          for (int r = 0; r < 8; ++r) sk[r] = _mm256_permutevar8x32_epi32(sc[k / 4][r], idx);
        }
        __m256i s[1][T];
        for (int t = 0; t < T; ++t) {
          const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t] + 32 * b));
          __m256i part[8];
          if constexpr (kQ6) {
            const __m256i c = _mm256_maddubs_epi16(k32, av);
            for (int r = 0; r < 8; ++r) {
              part[r] = _mm256_madd_epi16(_mm256_sub_epi16(_mm256_maddubs_epi16(lv[r], av), c), sk[r]);
            }
          } else {
            for (int r = 0; r < 8; ++r) part[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(lv[r], av), ones);
          }
          s[0][t] = ReduceRows8(part);
        }
        if constexpr (kQ6) {
          Fold<false>(s, dw, dw, a, b, nb, n_in, acc);
        } else {
          Fold<true>(s, &dw[k], &mw[k], a, b, nb, n_in, acc);
        }
      }
    }
    StoreTile<1, T>(acc, rows_left, y, ldy);
  }
};

template <DType kType, int kG, int kT>
void ComputePanel(const uint8_t* p, int64_t ps, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                  int64_t n_in, float* y, int64_t ldy) {
  GroupTileLoop<PanelKernel<kType>, 8, kG, kT>(p, ps, n_rows, act, as, n_tok, n_in, y, ldy);
}

template <DType kType, int kT>
void ComputeFused(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                  int64_t n_in, float* y, int64_t ldy) {
  FusedGroupLoop<FusedRowsKernel<kType>, 8, kT>(w, ws, n_rows, RawRowBytes<kType>(n_in), act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- plans

constexpr int64_t kPanelChunk = 32;  // rows per panel (a multiple of 8 * kTileG)
constexpr int64_t kFusedChunk = 16;  // rows per fused work item
constexpr int kTileG = 2, kTileT = 2;

template <DType kType>
constexpr Plan MakePanelPlan() {
  return {ActBytesK, ConvertActK, PanelRowBytes<kType>, PackPanelK<kType>, ComputePanel<kType, kTileG, kTileT>,
          kPanelChunk, "avx2/int8-panel"};
}

template <DType kType>
constexpr Plan MakeFusedPlan() {
  return {ActBytesK, ConvertActK, nullptr, nullptr, ComputeFused<kType, 4>, kFusedChunk, "avx2/int8-fused-gemv"};
}

const Plan kPanel[] = {MakePanelPlan<DType::kQ4_K>(), MakePanelPlan<DType::kQ5_K>(), MakePanelPlan<DType::kQ6_K>()};
const Plan kFused[] = {MakeFusedPlan<DType::kQ4_K>(), MakeFusedPlan<DType::kQ5_K>(), MakeFusedPlan<DType::kQ6_K>()};
// From kPanelMinTokens (thread CPU time, docs/PERFORMANCE.md "AVX2 K-quant
// panel") the per-call panel pays for itself; below, the fused kernel.
// Pre-packed Q4_K: one group x up to 4 tokens (weights read once per 4
// tokens, prefetched) below kPackedQ4KPanelMin, the panel's 2 x 2 tile from it.
constexpr int64_t kPackedQ4KPanelMin = 8;
const Plan kPackedQ4KGemv = {ActBytesK, ConvertActK, nullptr, nullptr, ComputePackedQ4K<1, 4>, kFusedChunk,
                             "avx2/packed-gemv"};
const Plan kPackedQ4KPanel = {ActBytesK, ConvertActK, nullptr, nullptr, ComputePackedQ4K<kTileG, kTileT>, kPanelChunk,
                              "avx2/packed-panel"};
constexpr int64_t kPanelMin[] = {Traits<DType::kQ4_K>::kPanelMinTokens, Traits<DType::kQ5_K>::kPanelMinTokens,
                                 Traits<DType::kQ6_K>::kPanelMinTokens};

int PlanIndex(DType type) {
  switch (type) {
    case DType::kQ4_K: return 0;
    case DType::kQ5_K: return 1;
    case DType::kQ6_K: return 2;
    default: return -1;
  }
}

}  // namespace

const Plan* Avx2KQuantPanelPlan(DType type, int64_t n_tokens, BatchPath path) {
  const int i = PlanIndex(type);
  if (i < 0) return nullptr;
  if (path == BatchPath::kGemv) return &kFused[i];
  if (path == BatchPath::kPanel) return &kPanel[i];
  return n_tokens >= kPanelMin[i] ? &kPanel[i] : &kFused[i];
}

const Plan* Avx2KQuantPackedPlan(DType type, int64_t n_tokens) {
  if (type != DType::kQ4_K) return nullptr;
  // From the per-call panel's threshold on, it reads the checkpoint's rows
  // (its f32 scales cost less compute than widening the record's bytes):
  // null sends MatMul there, with bitwise the same results.
  if (n_tokens >= Traits<DType::kQ4_K>::kPanelMinTokens) return nullptr;
  return n_tokens >= kPackedQ4KPanelMin ? &kPackedQ4KPanel : &kPackedQ4KGemv;
}

int64_t Avx2KQuantPackedBytes(DType type, int64_t n_rows, int64_t n_in) {
  if (type != DType::kQ4_K || n_in % kQK_K != 0) return 0;
  return (n_rows + 7) / 8 * 8 * Q4KPackedRowStride(n_in);
}

int64_t Avx2KQuantPackedRowStride(DType type, int64_t n_in) {
  return type == DType::kQ4_K ? Q4KPackedRowStride(n_in) : 0;
}

void Avx2KQuantPackRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, uint8_t* dst) {
  PAGODA_CHECK(type == DType::kQ4_K) << "no AVX2 packed layout for " << DTypeName(type);
  PackQ4KRows(w, w_stride, n_rows, n_in, dst);
}

}  // namespace pagoda::kernels::internal
