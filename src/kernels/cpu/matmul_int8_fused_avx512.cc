// AVX-512 VNNI fused kernels for quantized weights and small batches
// (decode): the int8 panel's arithmetic (matmul_int8_avx512.cc) read
// straight from the weight rows, with no per-call repack, so a token's row
// is bitwise the same whether the call has 1 token or hundreds (the
// server's batch invariance; the panel takes over from PanelMinTokens).
//
// Per group of 16 rows and 32-block b (K-quants: sub-block k of a
// super-block), each row's 32 level bytes are taken in element order as
// unsigned bytes u (level = u - off: Q4_0 off 8, Q5_0 16, Q8_0 128 (the
// signed byte with its top bit flipped), Q6_K 32, the others 0), two rows
// per zmm. One vpdpbusd against the token's signed activation bytes
// (ConvertS8, the panel's rounding) gives 8 dword partial sums per row; an
// add tree reduces them to one vector of 16 row sums (lane = row). Integer
// sums are exact, so
//   s_b = sum_k u_k q_k - off * sum_k q_k = sum_k level_k q_k
// is the panel's integer, and the f32 fold is the panel's, term for term:
//   acc = fma(float(s_b), dw_b * dx_b, acc)       [+ acc = fma(mw_b, xs_b,
//   acc): Q4_1, Q4_K, Q5_K] Q6_K (16-element sub-blocks j = 2b, 2b + 1, sums
//   s_j kept apart by the tree): f = fma(float(s_2b+1), sc_2b+1, float(s_2b) *
//   sc_2b); acc = fma(f, d * dx_b, acc)
// with dw, mw and d the same f32 values the panel stores (d * sc_j,
// (0 - dmin) * m_j for K-quants). Explicit intrinsics only, so
// -ffp-contract cannot change the order.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/int8_panel_avx512.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/matmul_tile_loop.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

// Row r (r < 8) of the zmm pairs below holds rows kPairLo[r] and kPairHi[r]:
// with this order the add tree leaves rows 0..15 in lanes 0..15.
constexpr int kPairLo[8] = {0, 1, 2, 3, 8, 9, 10, 11};
constexpr int kPairHi[8] = {4, 5, 6, 7, 12, 13, 14, 15};

inline __m512i Join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
inline __m256i Load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m512i Load32x2(const uint8_t* a, const uint8_t* b) { return Join(Load32(a), Load32(b)); }

// 16 bytes of each of two rows -> [a | a | b | b], then the low nibbles in
// 128-bit lanes 0 and 2 and the high nibbles in 1 and 3: the 32 nibble
// levels of each row in element order (elements 16.. are the high nibbles).
inline __m512i Nibbles16x2(const uint8_t* a, const uint8_t* b) {
  const __m512i v = Join(_mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                         _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b))));
  const __m512i shifted = _mm512_mask_mov_epi64(v, 0xCC, _mm512_srli_epi16(v, 4));
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
}

// Two rows' 32-bit qh (bit e: element e) as one byte mask.
inline __mmask64 BitsOf2(const uint8_t* a, const uint8_t* b) {
  uint32_t x, y;
  std::memcpy(&x, a, 4);
  std::memcpy(&y, b, 4);
  return _cvtu64_mask64(static_cast<uint64_t>(x) | (static_cast<uint64_t>(y) << 32));
}

// The scales of one super-block of 16 rows (lanes), per 32-block k.
struct Scales {
  __m512 dw[8], mw[8];  // Q6_K: dw[j], j < 16 via sc[], mw[0] = d
  __m512 sc[16];
};

// ---------------------------------------------------------------- types
//
// kSuper: elements per super-block (32 for the legacy types), kBytes its
// bytes; Load(p, ws, st): the scales of 16 rows' super-block at p + r * ws;
// Levels(a, b, k): the unsigned levels of 32-block k of rows a, b.

template <DType kType>
struct Fused;

template <>
struct Fused<DType::kQ4_0> {
  static constexpr int kSuper = 32, kOff = 8;
  static constexpr int64_t kBytes = sizeof(BlockQ4_0);
  static constexpr bool kMin = false, kPair = false;
  static void Load(const uint8_t* p, int64_t ws, Scales* st) { st->dw[0] = GatherScales(p, ws); }
  static constexpr int kN = 1;
  static void Levels(const uint8_t* a, const uint8_t* b, int, __m512i* u) { u[0] = Nibbles16x2(a + 2, b + 2); }
};

template <>
struct Fused<DType::kQ4_1> {
  static constexpr int kSuper = 32, kOff = 0;
  static constexpr int64_t kBytes = sizeof(BlockQ4_1);
  static constexpr bool kMin = true, kPair = false;
  static void Load(const uint8_t* p, int64_t ws, Scales* st) {
    const __m512i v = GatherRows16(p, ws);
    st->dw[0] = LowHalves(v);
    st->mw[0] = HighHalves(v);
  }
  static constexpr int kN = 1;
  static void Levels(const uint8_t* a, const uint8_t* b, int, __m512i* u) { u[0] = Nibbles16x2(a + 4, b + 4); }
};

template <>
struct Fused<DType::kQ5_0> {
  static constexpr int kSuper = 32, kOff = 16;
  static constexpr int64_t kBytes = sizeof(BlockQ5_0);
  static constexpr bool kMin = false, kPair = false;
  static void Load(const uint8_t* p, int64_t ws, Scales* st) { st->dw[0] = GatherScales(p, ws); }
  static constexpr int kN = 1;
  static void Levels(const uint8_t* a, const uint8_t* b, int, __m512i* u) {
    const __m512i v = Nibbles16x2(a + 6, b + 6);
    u[0] = _mm512_mask_add_epi8(v, BitsOf2(a + 2, b + 2), v, _mm512_set1_epi8(16));
  }
};

template <>
struct Fused<DType::kQ8_0> {
  static constexpr int kSuper = 32, kOff = 128;
  static constexpr int64_t kBytes = sizeof(BlockQ8_0);
  static constexpr bool kMin = false, kPair = false;
  static void Load(const uint8_t* p, int64_t ws, Scales* st) { st->dw[0] = GatherScales(p, ws); }
  static constexpr int kN = 1;
  static void Levels(const uint8_t* a, const uint8_t* b, int, __m512i* u) {
    u[0] = _mm512_xor_si512(Load32x2(a + 2, b + 2), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
};

// Q4_K / Q5_K: d, dmin and the 12 packed 6-bit scale/min bytes of 16 rows
// (blocks.h; the vector form of ScalesMinsK4 in kquant_scales.h), then
// dw[j] = d * sc_j and mw[j] = (0 - dmin) * m_j as the panels compute them.
inline void K4Scales(__m512i dd, __m512i w0, __m512i w1, __m512i w2, Scales* st) {
  const __m512 d = LowHalves(dd), ndmin = _mm512_sub_ps(_mm512_setzero_ps(), HighHalves(dd));
  const __m512i k3f = _mm512_set1_epi32(0x3f3f3f3f), k0f = _mm512_set1_epi32(0x0f0f0f0f),
                k30 = _mm512_set1_epi32(0x30303030);
  const __m512i sc[2] = {_mm512_and_si512(w0, k3f),
                         _mm512_or_si512(_mm512_and_si512(w2, k0f), _mm512_and_si512(_mm512_srli_epi32(w0, 2), k30))};
  const __m512i m[2] = {_mm512_and_si512(w1, k3f), _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, 4), k0f),
                                                                   _mm512_and_si512(_mm512_srli_epi32(w1, 2), k30))};
  const __m512i ff = _mm512_set1_epi32(0xff);
  for (int j = 0; j < 8; ++j) {
    const int sh = 8 * (j % 4);
    const __m512i s = _mm512_and_si512(_mm512_srli_epi32(sc[j / 4], sh), ff);
    const __m512i n = _mm512_and_si512(_mm512_srli_epi32(m[j / 4], sh), ff);
    st->dw[j] = _mm512_mul_ps(_mm512_cvtepi32_ps(s), d);
    st->mw[j] = _mm512_mul_ps(_mm512_cvtepi32_ps(n), ndmin);
  }
}

inline void K4Load(const uint8_t* p, int64_t ws, Scales* st) {
  K4Scales(GatherRows16(p, ws), GatherRows16(p + 4, ws), GatherRows16(p + 8, ws), GatherRows16(p + 12, ws), st);
}

template <>
struct Fused<DType::kQ4_K> {
  static constexpr int kSuper = 256, kOff = 0;
  static constexpr int64_t kBytes = sizeof(BlockQ4_K);
  static constexpr bool kMin = true, kPair = false;
  static void Load(const uint8_t* p, int64_t ws, Scales* st) { K4Load(p, ws, st); }
  // Sub-blocks k, k + 1 (k even): the low and high nibbles of qs[16 k, +32).
  static constexpr int kN = 2;
  static void Levels(const uint8_t* a, const uint8_t* b, int k, __m512i* u) {
    constexpr size_t kQs = offsetof(BlockQ4_K, qs);
    const __m512i v = Load32x2(a + kQs + 16 * k, b + kQs + 16 * k), m4 = _mm512_set1_epi8(0x0F);
    u[0] = _mm512_and_si512(v, m4);
    u[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  }
};

template <>
struct Fused<DType::kQ5_K> {
  static constexpr int kSuper = 256, kOff = 0;
  static constexpr int64_t kBytes = sizeof(BlockQ5_K);
  static constexpr bool kMin = true, kPair = false;
  static void Load(const uint8_t* p, int64_t ws, Scales* st) { K4Load(p, ws, st); }
  // As Q4_K, plus 16 where bit k (k + 1) of qh[l] is set (element l of the
  // sub-block).
  static constexpr int kN = 2;
  static void Levels(const uint8_t* a, const uint8_t* b, int k, __m512i* u) {
    constexpr size_t kQs = offsetof(BlockQ5_K, qs), kQh = offsetof(BlockQ5_K, qh);
    const __m512i v = Load32x2(a + kQs + 16 * k, b + kQs + 16 * k), m4 = _mm512_set1_epi8(0x0F);
    const __m512i h = Load32x2(a + kQh, b + kQh), k16 = _mm512_set1_epi8(16);
    const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    u[0] = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(h, _mm512_set1_epi8(static_cast<char>(1 << k))), lo, k16);
    u[1] = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(h, _mm512_set1_epi8(static_cast<char>(2 << k))), hi, k16);
  }
};

template <>
struct Fused<DType::kQ6_K> {
  static constexpr int kSuper = 256, kOff = 32;
  static constexpr int64_t kBytes = sizeof(BlockQ6_K);
  static constexpr bool kMin = false, kPair = true;
  // d (its dword read ending at the block's last byte) and the 16 int8
  // sub-block scales as exact floats.
  static void Load(const uint8_t* p, int64_t ws, Scales* st) {
    st->mw[0] = HighHalves(GatherRows16(p + offsetof(BlockQ6_K, d) - 2, ws));
    for (int i = 0; i < 4; ++i) {
      const __m512i v = GatherRows16(p + offsetof(BlockQ6_K, scales) + 4 * i, ws);
      for (int j = 0; j < 4; ++j) {
        const __m512i s = _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * j), 24);
        st->sc[4 * i + j] = _mm512_cvtepi32_ps(s);
      }
    }
  }
  // 32-block k (< 8) of half n = k / 4, g = k % 4: ql[64 n + 32 (g & 1), +32)
  // low (g < 2) or high nibbles, and bits 2g, 2g + 1 of qh[32 n + l] as bits
  // 4-5. Blocks k, k + 1 (k even) share the qh load.
  static constexpr int kN = 2;
  static void Levels(const uint8_t* a, const uint8_t* b, int k, __m512i* u) {
    constexpr size_t kQl = offsetof(BlockQ6_K, ql), kQh = offsetof(BlockQ6_K, qh);
    const int n = k / 4;
    const bool high = k % 4 == 2;
    const __m512i l0 = Load32x2(a + kQl + 64 * n, b + kQl + 64 * n);
    const __m512i l1 = Load32x2(a + kQl + 64 * n + 32, b + kQl + 64 * n + 32);
    const __m512i h = Load32x2(a + kQh + 32 * n, b + kQh + 32 * n);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i h0 = high ? h : _mm512_slli_epi16(h, 4);                        // bits 2g, 2g+1 -> 4-5
    const __m512i h1 = high ? _mm512_srli_epi16(h, 2) : _mm512_slli_epi16(h, 2);  // g + 1
    const __m512i q0 = high ? _mm512_srli_epi16(l0, 4) : l0, q1 = high ? _mm512_srli_epi16(l1, 4) : l1;
    u[0] = _mm512_or_si512(_mm512_and_si512(q0, m4), _mm512_and_si512(h0, m30));
    u[1] = _mm512_or_si512(_mm512_and_si512(q1, m4), _mm512_and_si512(h1, m30));
  }
};

// ---------------------------------------------------------------- compute

// 8 vectors of dword partial sums (vector r: 8 of row kPairLo[r], then 8 of
// row kPairHi[r]) -> lo: lanes = rows 0..15, sums of each row's partials
// 0-3; hi: of partials 4-7 (elements 0-15 and 16-31 of the block).
inline void ReduceRows16(const __m512i* p, __m512i* lo, __m512i* hi) {
  __m512i t[4];
  for (int j = 0; j < 4; ++j) {
    t[j] =
        _mm512_add_epi32(_mm512_unpacklo_epi32(p[2 * j], p[2 * j + 1]), _mm512_unpackhi_epi32(p[2 * j], p[2 * j + 1]));
  }
  const __m512i x = _mm512_add_epi32(_mm512_unpacklo_epi64(t[0], t[1]), _mm512_unpackhi_epi64(t[0], t[1]));
  const __m512i y = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2], t[3]), _mm512_unpackhi_epi64(t[2], t[3]));
  // x: 128-bit lanes = rows 0-3 (partials 0-3), rows 0-3 (4-7), rows 4-7 (0-3),
  // rows 4-7 (4-7); y: the same for rows 8-15.
  *lo = _mm512_shuffle_i32x4(x, y, 0x88);
  *hi = _mm512_shuffle_i32x4(x, y, 0xDD);
}

template <DType kType>
struct FusedKernel {
  using F = Fused<kType>;
  template <int G, int T>
  static void Run(const uint8_t* w, int64_t ws, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    static_assert(G == 1);
    constexpr int kSub = F::kSuper / 32;
    const int64_t nb = n_in / 32, n_super = n_in / F::kSuper;
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(act + t * as);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n_super; ++i) {
      const uint8_t* p = w + i * F::kBytes;
      Scales st;
      F::Load(p, ws, &st);
      for (int k0 = 0; k0 < kSub; k0 += F::kN) {
        // This super-block's share of the next group of 16 rows, into L1,
        // spread over its steps (the rows of a group are usually contiguous:
        // ws = n_super * kBytes). A burst of them per super-block stalled on
        // full fill buffers.
        constexpr int64_t kShare = 16 * F::kBytes / (kSub / F::kN);
        const char* next = reinterpret_cast<const char*>(w + 16 * ws + 16 * F::kBytes * i + kShare * (k0 / F::kN));
        for (int64_t off = 0; off < kShare; off += 64) _mm_prefetch(next + off, _MM_HINT_T0);
        __m512i u[F::kN][8];
        for (int r = 0; r < 8; ++r) {
          __m512i v[F::kN];
          F::Levels(p + kPairLo[r] * ws, p + kPairHi[r] * ws, k0, v);
          for (int j = 0; j < F::kN; ++j) u[j][r] = v[j];
        }
        for (int j = 0; j < F::kN; ++j) {
          const int k = k0 + j;
          const int64_t b = i * kSub + k;
          for (int t = 0; t < T; ++t) {
            const __m512i av =
                _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t] + 32 * b)));
            __m512i part[8];
            for (int r = 0; r < 8; ++r) part[r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[j][r], av);
            __m512i lo, hi;
            ReduceRows16(part, &lo, &hi);
            const float* dv = reinterpret_cast<const float*>(a[t] + n_in);
            const __m512 dx = _mm512_set1_ps(dv[b]);
            if constexpr (F::kPair) {
              // Q6_K: 32 * the activation sum of each half off its row sums.
              const int32_t* half = reinterpret_cast<const int32_t*>(dv + 3 * nb) + 2 * b;
              lo = _mm512_sub_epi32(lo, _mm512_set1_epi32(F::kOff * half[0]));
              hi = _mm512_sub_epi32(hi, _mm512_set1_epi32(F::kOff * half[1]));
              const __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), st.sc[2 * k + 1],
                                               _mm512_mul_ps(_mm512_cvtepi32_ps(lo), st.sc[2 * k]));
              acc[t] = _mm512_fmadd_ps(f, _mm512_mul_ps(st.mw[0], dx), acc[t]);
            } else {
              __m512i s = _mm512_add_epi32(lo, hi);
              if constexpr (F::kOff != 0) {
                const int32_t sum = reinterpret_cast<const int32_t*>(dv + nb)[b];
                s = _mm512_sub_epi32(s, _mm512_set1_epi32(F::kOff * sum));
              }
              const __m512 dw = st.dw[kSub == 1 ? 0 : k];
              acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, dx), acc[t]);
              if constexpr (F::kMin) {
                const __m512 xs = _mm512_set1_ps(dv[2 * nb + b]);
                acc[t] = _mm512_fmadd_ps(st.mw[kSub == 1 ? 0 : k], xs, acc[t]);
              }
            }
          }
        }
      }
    }
    const __mmask16 m = static_cast<__mmask16>((1u << std::min<int64_t>(rows_left, 16)) - 1);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, m, acc[t]);
  }
};

template <DType kType>
void ComputeFused(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                  int64_t n_in, float* y, int64_t ldy) {
  const int64_t row_bytes = n_in / Fused<kType>::kSuper * Fused<kType>::kBytes;
  FusedGroupLoop<FusedKernel<kType>, 16, 4>(w, ws, n_rows, row_bytes, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- pre-packed Q4_K
//
// A Q4_K matrix repacked once at load (PackedWeightStore), the checkpoint's
// bytes rearranged so that 16 rows sit in the lanes with no gathers and no
// add tree. Per group of 16 rows (missing rows zero) and super-block,
// kQ4KGroupSuperBytes = 2304 bytes (16 x 144, the Q4_K block size):
//   4 vectors: dword j of the block's first 16 bytes (j = 0: d | dmin; 1-3:
//              the 12 scale bytes) of rows 0..15, lane = row
//   32 vectors: dword q of qs of rows 0..15 (qs bytes 4q..4q+3: elements
//              4q % 32.. of sub-block 2 (q / 8) in the low nibbles, of
//              sub-block 2 (q / 8) + 1 in the high)
// The nibbles are vpdpbusd's unsigned operand against the signed activation
// bytes: the panel's integer sums (Q4_K has no offset) and its fold, so the
// results are bitwise the panel's and the fused kernel's.
constexpr int64_t kQ4KGroupSuperBytes = 16 * sizeof(BlockQ4_K);

void PackQ4KGroup(const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, uint8_t* dst) {
  const int64_t n_super = n_in / kQK_K;
  std::memset(dst, 0, n_super * kQ4KGroupSuperBytes);
  for (int64_t i = 0; i < n_super; ++i) {
    uint8_t* o = dst + i * kQ4KGroupSuperBytes;
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* b = w + r * ws + i * sizeof(BlockQ4_K);
      for (int j = 0; j < 4; ++j) std::memcpy(o + 64 * j + 4 * r, b + 4 * j, 4);
      for (int q = 0; q < 32; ++q) std::memcpy(o + 256 + 64 * q + 4 * r, b + offsetof(BlockQ4_K, qs) + 4 * q, 4);
    }
  }
}

// One super-block i (at g) of a 16-row group of pre-packed Q4_K into acc.
struct PackedQ4KSuper {
  static constexpr int64_t kBytes = kQ4KGroupSuperBytes;
  template <int T>
  static void Run(const uint8_t* g, int64_t i, const int8_t* const* a, int64_t nb, int64_t n_in, __m512* acc) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    // Two super-blocks ahead into L1 (single thread, cold weights: 1.37x the
    // q8k GEMV at one ahead, 1.51x at two, 1.37x at four; none: 0.90x).
    for (int64_t off = 0; off < kQ4KGroupSuperBytes; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(g + 2 * kQ4KGroupSuperBytes + off), _MM_HINT_T0);
    }
    Scales st;
    K4Scales(_mm512_load_si512(g), _mm512_load_si512(g + 64), _mm512_load_si512(g + 128), _mm512_load_si512(g + 192),
             &st);
    for (int c = 0; c < 4; ++c) {
      __m512i s[2][T];
      for (int t = 0; t < T; ++t) s[0][t] = s[1][t] = _mm512_setzero_si512();
      const int64_t b0 = 8 * i + 2 * c;
      for (int q = 0; q < 8; ++q) {
        const __m512i v = _mm512_load_si512(g + 256 + 64 * (8 * c + q));
        const __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        for (int t = 0; t < T; ++t) {
          int32_t x0, x1;
          std::memcpy(&x0, a[t] + 32 * b0 + 4 * q, 4);
          std::memcpy(&x1, a[t] + 32 * (b0 + 1) + 4 * q, 4);
          s[0][t] = _mm512_dpbusd_epi32(s[0][t], lo, _mm512_set1_epi32(x0));
          s[1][t] = _mm512_dpbusd_epi32(s[1][t], hi, _mm512_set1_epi32(x1));
        }
      }
      for (int h = 0; h < 2; ++h) {
        const int64_t b = b0 + h;
        for (int t = 0; t < T; ++t) {
          const float* dv = reinterpret_cast<const float*>(a[t] + n_in);
          const __m512 dx = _mm512_set1_ps(dv[b]);
          acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[h][t]), _mm512_mul_ps(st.dw[2 * c + h], dx), acc[t]);
          acc[t] = _mm512_fmadd_ps(st.mw[2 * c + h], _mm512_set1_ps(dv[2 * nb + b]), acc[t]);
        }
      }
    }
  }
};

// A pre-packed kernel over one 16-row group: S::Run per super-block.
template <class S>
struct PackedKKernel {
  template <int G, int T>
  static void Run(const uint8_t* p, int64_t, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in, float* y,
                  int64_t ldy) {
    static_assert(G == 1);
    const int64_t nb = n_in / 32, n_super = n_in / kQK_K;
    const int8_t* a[T];
    for (int t = 0; t < T; ++t) a[t] = reinterpret_cast<const int8_t*>(act + t * as);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n_super; ++i) S::template Run<T>(p + i * S::kBytes, i, a, nb, n_in, acc);
    const __mmask16 m = static_cast<__mmask16>((1u << std::min<int64_t>(rows_left, 16)) - 1);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, m, acc[t]);
  }
};

void ComputePackedQ4K(const uint8_t* p, int64_t ps, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                      int64_t n_in, float* y, int64_t ldy) {
  GroupTileLoop<PackedKKernel<PackedQ4KSuper>, 16, 1, 4>(p, ps, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- pre-packed Q6_K
//
// The same for Q6_K: per group of 16 rows and super-block, 16 x 210 = 3360
// bytes (not a multiple of 64: unaligned loads):
//   32 vectors: dword q of ql of rows 0..15       (at 64 q)
//   16 vectors: dword q of qh                     (at 2048 + 64 q)
//   4 vectors:  dword q of the 16 int8 scales     (at 3072 + 64 q)
//   16 fp16:    d of rows 0..15                   (at 3328)
// Sub-block k (32 elements) of half n = k / 4, g = k % 4: dword q (elements
// 4q..4q+3) has its low bits in ql vector 16 n + 8 (g & 1) + q (low nibble
// for g < 2, high for g >= 2) and bits 2g, 2g + 1 of qh vector 8 n + q. The
// integer sums and fold are the panel's (kPair, as Fused<kQ6_K>).
constexpr int64_t kQ6KGroupSuperBytes = 16 * sizeof(BlockQ6_K);

void PackQ6KGroup(const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, uint8_t* dst) {
  const int64_t n_super = n_in / kQK_K;
  std::memset(dst, 0, n_super * kQ6KGroupSuperBytes);
  for (int64_t i = 0; i < n_super; ++i) {
    uint8_t* o = dst + i * kQ6KGroupSuperBytes;
    for (int64_t r = 0; r < n_rows; ++r) {
      const uint8_t* b = w + r * ws + i * sizeof(BlockQ6_K);
      for (int q = 0; q < 32; ++q) std::memcpy(o + 64 * q + 4 * r, b + offsetof(BlockQ6_K, ql) + 4 * q, 4);
      for (int q = 0; q < 16; ++q) std::memcpy(o + 2048 + 64 * q + 4 * r, b + offsetof(BlockQ6_K, qh) + 4 * q, 4);
      for (int q = 0; q < 4; ++q) std::memcpy(o + 3072 + 64 * q + 4 * r, b + offsetof(BlockQ6_K, scales) + 4 * q, 4);
      std::memcpy(o + 3328 + 2 * r, b + offsetof(BlockQ6_K, d), 2);
    }
  }
}

inline __m512i LoadU(const uint8_t* p) { return _mm512_loadu_si512(p); }

// One super-block i (at g) of a 16-row group of pre-packed Q6_K into acc.
struct PackedQ6KSuper {
  static constexpr int64_t kBytes = kQ6KGroupSuperBytes;
  template <int T>
  static void Run(const uint8_t* g, int64_t i, const int8_t* const* a, int64_t nb, int64_t n_in, __m512* acc) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    for (int64_t off = 0; off < kQ6KGroupSuperBytes; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(g + 2 * kQ6KGroupSuperBytes + off), _MM_HINT_T0);
    }
    __m512 sc[16];
    for (int q = 0; q < 4; ++q) {
      const __m512i v = LoadU(g + 3072 + 64 * q);
      for (int j = 0; j < 4; ++j)
        sc[4 * q + j] = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * j), 24));
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g + 3328)));
    for (int k = 0; k < 8; ++k) {
      const int n = k / 4, gg = k % 4;
      const int64_t b = 8 * i + k;
      __m512i s[2][T];
      for (int t = 0; t < T; ++t) s[0][t] = s[1][t] = _mm512_setzero_si512();
      for (int q = 0; q < 8; ++q) {
        const __m512i l = LoadU(g + 64 * (16 * n + 8 * (gg & 1) + q));
        const __m512i h = LoadU(g + 2048 + 64 * (8 * n + q));
        const __m512i lo = _mm512_and_si512(gg < 2 ? l : _mm512_srli_epi16(l, 4), m4);
        const __m512i hs = gg == 0   ? _mm512_slli_epi16(h, 4)
                           : gg == 1 ? _mm512_slli_epi16(h, 2)
                           : gg == 2 ? h
                                     : _mm512_srli_epi16(h, 2);
        const __m512i u = _mm512_or_si512(lo, _mm512_and_si512(hs, m30));
        for (int t = 0; t < T; ++t) {
          int32_t x;
          std::memcpy(&x, a[t] + 32 * b + 4 * q, 4);
          s[q / 4][t] = _mm512_dpbusd_epi32(s[q / 4][t], u, _mm512_set1_epi32(x));
        }
      }
      for (int t = 0; t < T; ++t) {
        const float* dv = reinterpret_cast<const float*>(a[t] + n_in);
        const int32_t* half = reinterpret_cast<const int32_t*>(dv + 3 * nb) + 2 * b;
        const __m512i lo = _mm512_sub_epi32(s[0][t], _mm512_set1_epi32(32 * half[0]));
        const __m512i hi = _mm512_sub_epi32(s[1][t], _mm512_set1_epi32(32 * half[1]));
        const __m512 f =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), sc[2 * k + 1], _mm512_mul_ps(_mm512_cvtepi32_ps(lo), sc[2 * k]));
        acc[t] = _mm512_fmadd_ps(f, _mm512_mul_ps(d, _mm512_set1_ps(dv[b])), acc[t]);
      }
    }
  }
};

void ComputePackedQ6K(const uint8_t* p, int64_t ps, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                      int64_t n_in, float* y, int64_t ldy) {
  GroupTileLoop<PackedKKernel<PackedQ6KSuper>, 16, 1, 4>(p, ps, n_rows, act, as, n_tok, n_in, y, ldy);
}

constexpr int64_t kFusedChunk = 32;  // rows per work item (two groups of 16)

template <DType kType>
constexpr Plan MakePlan() {
  return {S8ActBytes, ConvertS8, nullptr, nullptr, ComputeFused<kType>, kFusedChunk, "avx512/int8-fused-gemv"};
}

const Plan kQ4_0 = MakePlan<DType::kQ4_0>();
const Plan kQ4_1 = MakePlan<DType::kQ4_1>();
const Plan kQ5_0 = MakePlan<DType::kQ5_0>();
const Plan kQ8_0 = MakePlan<DType::kQ8_0>();
const Plan kQ4_K = MakePlan<DType::kQ4_K>();
const Plan kQ5_K = MakePlan<DType::kQ5_K>();
const Plan kQ6_K = MakePlan<DType::kQ6_K>();
const Plan kPackedQ4K = {S8ActBytes, ConvertS8, nullptr, nullptr, ComputePackedQ4K, kFusedChunk, "avx512/packed-gemv"};
const Plan kPackedQ6K = {S8ActBytes, ConvertS8, nullptr, nullptr, ComputePackedQ6K, kFusedChunk, "avx512/packed-gemv"};

}  // namespace

const Plan* Avx512Int8FusedPlan(DType type) {
  switch (type) {
    case DType::kQ4_0:
      return &kQ4_0;
    case DType::kQ4_1:
      return &kQ4_1;
    case DType::kQ5_0:
      return &kQ5_0;
    case DType::kQ8_0:
      return &kQ8_0;
    case DType::kQ4_K:
      return &kQ4_K;
    case DType::kQ5_K:
      return &kQ5_K;
    case DType::kQ6_K:
      return &kQ6_K;
    default:
      return nullptr;
  }
}

int64_t Avx512PackedKBytes(DType type, int64_t n_rows, int64_t n_in) {
  if (n_in % kQK_K != 0) return 0;
  const int64_t per = type == DType::kQ4_K ? kQ4KGroupSuperBytes : type == DType::kQ6_K ? kQ6KGroupSuperBytes : 0;
  return (n_rows + 15) / 16 * (n_in / kQK_K) * per;
}

void Avx512PackKRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, uint8_t* dst) {
  if (type == DType::kQ4_K) return PackQ4KGroup(w, w_stride, n_rows, n_in, dst);
  PackQ6KGroup(w, w_stride, n_rows, n_in, dst);
}

const Plan* Avx512PackedKPlan(DType type) {
  return type == DType::kQ4_K ? &kPackedQ4K : type == DType::kQ6_K ? &kPackedQ6K : nullptr;
}

}  // namespace pagoda::kernels::internal
