// AVX-512 VNNI "small GEMM" for quantized weights and a batch of tokens
// (batched decode, short prefill): an int8 panel plan.
//
// Activations: per 32-block Q8 (max-abs, d = amax / 127), stored per token as
//   u8 qs[n_in] (= q + 128), f32 d[n_in / 32], f32 xs[n_in / 32] (d * sum q).
// Error: activation rounding only, |dx| <= amax_blk / 254 (as the GEMV plans).
//
// Weights: each chunk of rows is unpacked once per call into an int8 panel
// that every token of the call reuses. Rows are taken 16 at a time (one zmm
// lane per row) and split into blocks of kB elements (32; 16 for Q6_K, whose
// sub-block scales are per 16). Per (16 rows, block) the panel holds
//   kB/4 vectors: s8 levels, vector q = bytes [4q, 4q+4) of the 16 rows
//   i32 negw[16]: -128 * sum of the row's levels (undoes the +128 of qs)
//   f32 dw[16]:   the block scale of each row (K-quants: d * sub-scale)
//   f32 mw[16]:   Q4_1 / Q4_K / Q5_K only: the additive min of each row
// so one vpdpbusd (u8 activation bytes broadcast x s8 levels of 16 rows)
// advances 16 row sums at once and each block costs one int->f32 convert and
// two f32 ops per 16 rows x token, with no horizontal reduction at the end.
// Levels: Q4_0 q-8, Q5_0 q-16, Q8_0 q, Q6_K q-32 (signed), Q4_1/Q4_K/Q5_K
// the unsigned level with the min added through xs. |level| <= 128 and
// |u8 x s8 sum| <= 255 * 128 * 32 per block, far inside int32.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>

#include "base/check.h"
#include "kernels/cpu/int8_panel_avx512.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/matmul_tile_loop.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

// ---------------------------------------------------------------- activations
//
// RoundUp, QuantBlock32 and the signed layout (ConvertS8): int8_panel_avx512.h.

int64_t U8ActBytes(int64_t n_in) { return RoundUp(n_in + n_in / 32 * 8, 64); }

void ConvertU8(const float* x, int64_t n_in, void* dst) {
  uint8_t* qs = static_cast<uint8_t*>(dst);
  const int64_t nb = n_in / 32;
  float* dv = reinterpret_cast<float*>(qs + n_in);
  float* xs = dv + nb;
  const __m512i k128 = _mm512_set1_epi32(128);
  for (int64_t b = 0; b < nb; ++b) {
    __m512i i0, i1;
    const float d = QuantBlock32(x + 32 * b, &i0, &i1);
    const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b), _mm512_cvtepi32_epi8(_mm512_add_epi32(i0, k128)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 32 * b + 16), _mm512_cvtepi32_epi8(_mm512_add_epi32(i1, k128)));
    dv[b] = d;
    xs[b] = d * static_cast<float>(sum);
  }
  std::memset(qs + n_in + 8 * nb, 0, U8ActBytes(n_in) - n_in - 8 * nb);
}

// ---------------------------------------------------------------- row unpackers
//
// Unpack<kType>::Row writes the levels of one super-block (kSuper elements)
// of one row to lv[0, kSuper) and the scale (and min) of each of its kSuper/kB
// blocks to dw[] (mw[]).

inline float H2F(Half h) { return _cvtsh_ss(h); }

inline __m256i Nibbles32(const uint8_t* qs16) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs16));
  const __m128i m4 = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m4), _mm_and_si128(v, m4));
}

inline void Store32(int8_t* dst, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v); }

template <DType kType>
struct Unpack;

template <>
struct Unpack<DType::kQ4_0> {
  static constexpr int kSuper = 32, kB = 32;
  static constexpr int64_t kBytes = sizeof(BlockQ4_0);
  static constexpr bool kMin = false, kPair = false;
  static void Row(const uint8_t* p, int8_t* lv, float* dw, float*) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(p);
    Store32(lv, _mm256_sub_epi8(Nibbles32(b->qs), _mm256_set1_epi8(8)));
    dw[0] = H2F(b->d);
  }
};

template <>
struct Unpack<DType::kQ4_1> {
  static constexpr int kSuper = 32, kB = 32;
  static constexpr int64_t kBytes = sizeof(BlockQ4_1);
  static constexpr bool kMin = true, kPair = false;
  static void Row(const uint8_t* p, int8_t* lv, float* dw, float* mw) {
    const auto* b = reinterpret_cast<const BlockQ4_1*>(p);
    Store32(lv, Nibbles32(b->qs));
    dw[0] = H2F(b->d);
    mw[0] = H2F(b->m);
  }
};

template <>
struct Unpack<DType::kQ5_0> {
  static constexpr int kSuper = 32, kB = 32;
  static constexpr int64_t kBytes = sizeof(BlockQ5_0);
  static constexpr bool kMin = false, kPair = false;
  static void Row(const uint8_t* p, int8_t* lv, float* dw, float*) {
    const auto* b = reinterpret_cast<const BlockQ5_0*>(p);
    uint32_t qh;
    std::memcpy(&qh, b->qh, 4);
    const __m256i u = Nibbles32(b->qs);
    const __m256i v = _mm256_mask_add_epi8(u, static_cast<__mmask32>(qh), u, _mm256_set1_epi8(16));
    Store32(lv, _mm256_sub_epi8(v, _mm256_set1_epi8(16)));
    dw[0] = H2F(b->d);
  }
};

template <>
struct Unpack<DType::kQ8_0> {
  static constexpr int kSuper = 32, kB = 32;
  static constexpr int64_t kBytes = sizeof(BlockQ8_0);
  static constexpr bool kMin = false, kPair = false;
  static void Row(const uint8_t* p, int8_t* lv, float* dw, float*) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
    std::memcpy(lv, b->qs, 32);
    dw[0] = H2F(b->d);
  }
};

// Q4_K / Q5_K 6-bit scale and min of sub-block j.
inline void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K/Q5_K: sub-block j (32 elements) = low (j even) or high (j odd)
// nibbles of qs[32 * (j / 2), +32), plus 16 * bit j of qh[l] for Q5_K.
template <bool kQ5>
struct UnpackK4 {
  static constexpr int kSuper = 256, kB = 32;
  static constexpr int64_t kBytes = kQ5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static constexpr bool kMin = true, kPair = false;
  static void Row(const uint8_t* p, int8_t* lv, float* dw, float* mw) {
    using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
    const auto* b = reinterpret_cast<const Block*>(p);
    const float d = H2F(b->d), dmin = H2F(b->dmin);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kQ5) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh));
    for (int c = 0; c < 4; ++c) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * c));
      __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      if constexpr (kQ5) {
        const __m256i sixteen = _mm256_set1_epi8(16);
        lo = _mm256_mask_add_epi8(lo, _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(1 << (2 * c)))),
                                  lo, sixteen);
        hi = _mm256_mask_add_epi8(
            hi, _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(1 << (2 * c + 1)))), hi, sixteen);
      }
      Store32(lv + 64 * c, lo);
      Store32(lv + 64 * c + 32, hi);
    }
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      ScaleMinK4(j, b->scales, &sc, &m);
      dw[j] = d * static_cast<float>(sc);
      mw[j] = (0.0f - dmin) * static_cast<float>(m);  // as the AVX2 panel (K4Scales)
    }
  }
};

template <>
struct Unpack<DType::kQ4_K> : UnpackK4<false> {};
template <>
struct Unpack<DType::kQ5_K> : UnpackK4<true> {};

// Q6_K: half n (128 elements), l < 32: ql[64n + l], ql[64n + 32 + l] low
// nibbles -> elements l, 32 + l; high nibbles -> 64 + l, 96 + l; bit pairs
// 0,1 / 2,3 / 4,5 / 6,7 of qh[32n + l] are their bits 4-5. Level q - 32.
template <>
struct Unpack<DType::kQ6_K> {
  static constexpr int kSuper = 256, kB = 16;
  static constexpr int64_t kBytes = sizeof(BlockQ6_K);
  static constexpr bool kMin = false, kPair = true;
  static void Row(const uint8_t* p, int8_t* lv, float* dw, float* mw) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(p);
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30), k32 = _mm256_set1_epi8(32);
    for (int n = 0; n < 2; ++n) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * n));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * n + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * n));
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
      const __m256i q2 = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
      const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m30));
      const __m256i q4 =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
      int8_t* o = lv + 128 * n;
      Store32(o, _mm256_sub_epi8(q1, k32));
      Store32(o + 32, _mm256_sub_epi8(q2, k32));
      Store32(o + 64, _mm256_sub_epi8(q3, k32));
      Store32(o + 96, _mm256_sub_epi8(q4, k32));
    }
    const float d = H2F(b->d);
    for (int j = 0; j < 16; ++j) {
      dw[j] = static_cast<float>(b->scales[j]);  // exact
      mw[j] = d;
    }
  }
};

// ---------------------------------------------------------------- panel layout

template <int kB, bool kMin>
struct PanelLayout {
  static constexpr int kQ = kB / 4;  // level vectors per block
  static constexpr int64_t kNegW = kQ * 64, kDw = kNegW + 64, kMw = kDw + 64;
  static constexpr int64_t kBlockBytes = kDw + 64 + (kMin ? 64 : 0);
  // Per row: one sixteenth of a 16-row group.
  static int64_t RowBytes(int64_t n_in) { return n_in / kB * kBlockBytes / 16; }
};

// Index vectors for one transpose stage: inputs a, b hold nr rows x nq dword
// columns each (lane = row * nq + col; b's rows follow a's), the output half
// h holds the 2*nr rows x columns [h*nq/2, (h+1)*nq/2).
constexpr std::array<uint32_t, 16> MergeIndex(int nr, int nq, int h) {
  std::array<uint32_t, 16> v{};
  const int nq2 = nq / 2;
  for (int l = 0; l < 16; ++l) {
    const int ri = l / nq2, qi = l % nq2 + h * nq2;
    v[l] = static_cast<uint32_t>(ri < nr ? ri * nq + qi : 16 + (ri - nr) * nq + qi);
  }
  return v;
}
constexpr std::array<std::array<uint32_t, 16>, 6> kMergeIdx = {
    MergeIndex(2, 8, 0), MergeIndex(2, 8, 1), MergeIndex(4, 4, 0),
    MergeIndex(4, 4, 1), MergeIndex(8, 2, 0), MergeIndex(8, 2, 1)};

// 16 rows x kB levels (row r at lv + r * stride) -> kB/4 vectors, vector q
// holding dword q of rows 0..15.
template <int kB>
inline void Transpose16(const int8_t* lv, int64_t stride, __m512i* out) {
  constexpr int kQ0 = kB / 4, kR0 = 16 / kQ0;
  __m512i v[kQ0];
  for (int i = 0; i < kQ0; ++i) {
    const int8_t* r = lv + kR0 * i * stride;
    if constexpr (kB == 32) {
      v[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r))),
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + stride)), 1);
    } else {
      const auto l = [&](int k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + k * stride)); };
      const __m256i lo = _mm256_set_m128i(l(1), l(0)), hi = _mm256_set_m128i(l(3), l(2));
      v[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
  }
  // Vectors as [row group g][column chunk c], nc chunks; each stage merges
  // row groups 2g', 2g'+1 and splits every chunk in two.
  int nr = kR0, nq = kQ0;
  while (nr < 16) {
    const int stage = nr == 2 ? 0 : nr == 4 ? 1 : 2;
    const __m512i i0 = _mm512_loadu_si512(kMergeIdx[2 * stage].data());
    const __m512i i1 = _mm512_loadu_si512(kMergeIdx[2 * stage + 1].data());
    const int ng = 16 / nr, nc = kQ0 / nq;
    __m512i w[kQ0];
    for (int g = 0; g < ng / 2; ++g) {
      for (int c = 0; c < nc; ++c) {
        const __m512i a = v[(2 * g) * nc + c], b = v[(2 * g + 1) * nc + c];
        w[g * 2 * nc + 2 * c] = _mm512_permutex2var_epi32(a, i0, b);
        w[g * 2 * nc + 2 * c + 1] = _mm512_permutex2var_epi32(a, i1, b);
      }
    }
    for (int i = 0; i < kQ0; ++i) v[i] = w[i];
    nr *= 2;
    nq /= 2;
  }
  for (int i = 0; i < kQ0; ++i) out[i] = v[i];
}

// Writes one (16 rows, block) of the panel from its kB/4 level vectors.
template <int kB, bool kMin>
inline void StoreBlock(const __m512i* q, __m512 dw, uint8_t* o) {
  using L = PanelLayout<kB, kMin>;
  __m512i sum = _mm512_setzero_si512();
  for (int i = 0; i < L::kQ; ++i) {
    _mm512_store_si512(o + 64 * i, q[i]);
    sum = _mm512_dpbusd_epi32(sum, _mm512_set1_epi8(1), q[i]);
  }
  _mm512_store_si512(o + L::kNegW, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
  _mm512_store_ps(o + L::kDw, dw);
}

// Four Q4_0 nibble vectors (dword q of 16 rows' qs) -> the eight s8 level
// vectors of the panel: low nibbles (elements 4q..) then high (16+4q..), - 8.
inline void SplitQ4_0Nibbles(const __m512i* v, __m512i* q) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), k8 = _mm512_set1_epi8(8);
  for (int i = 0; i < 4; ++i) {
    q[i] = _mm512_sub_epi8(_mm512_and_si512(v[i], m4), k8);
    q[i + 4] = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v[i], 4), m4), k8);
  }
}

// Q4_0 / Q8_0 groups of 16 full rows: transposed straight from the weight
// rows (Q4_0 in the nibble domain: dword q of qs holds elements 4q..4q+3 in
// its low and 16+4q.. in its high nibbles), no staging copy.
template <DType kType>
void PackDirect(const uint8_t* w, int64_t ws, int64_t n_in, uint8_t* o) {
  constexpr bool kQ4 = kType == DType::kQ4_0;
  using Block = std::conditional_t<kQ4, BlockQ4_0, BlockQ8_0>;
  using L = PanelLayout<32, false>;
  const int64_t nb = n_in / 32;
  for (int64_t b = 0; b < nb; ++b, o += L::kBlockBytes) {
    const uint8_t* blk = w + b * sizeof(Block);
    __m512i q[8];
    if constexpr (kQ4) {
      __m512i v[4];
      Transpose16<16>(reinterpret_cast<const int8_t*>(blk + 2), ws, v);
      SplitQ4_0Nibbles(v, q);
    } else {
      Transpose16<32>(reinterpret_cast<const int8_t*>(blk + 2), ws, q);
    }
    StoreBlock<32, false>(q, GatherScales(blk, ws), o);
  }
}

// Panel of rows [0, n_rows) (a multiple of 16 rows; missing rows are zero).
template <DType kType>
void PackPanel(DType, const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, void* dst) {
  using U = Unpack<kType>;
  using L = PanelLayout<U::kB, U::kMin || U::kPair>;
  constexpr int kSub = U::kSuper / U::kB;
  const int64_t n_super = n_in / U::kSuper;
  const int64_t group_bytes = L::RowBytes(n_in) * 16;
  alignas(64) int8_t lv[16 * U::kSuper];
  alignas(64) float dw[16][kSub], mw[16][kSub];
  const __m512i ones = _mm512_set1_epi8(1);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16, out += group_bytes) {
    const int nr = static_cast<int>(std::min<int64_t>(16, n_rows - r0));
    if constexpr (kType == DType::kQ4_0 || kType == DType::kQ8_0) {
      if (nr == 16 && ws * 15 <= INT32_MAX) {
        PackDirect<kType>(w + r0 * ws, ws, n_in, out);
        continue;
      }
    }
    if (nr < 16) {
      std::memset(lv, 0, sizeof(lv));
      std::memset(dw, 0, sizeof(dw));
      std::memset(mw, 0, sizeof(mw));
    }
    uint8_t* o = out;
    for (int64_t s = 0; s < n_super; ++s) {
      for (int r = 0; r < nr; ++r) {
        const uint8_t* src = w + (r0 + r) * ws + s * U::kBytes;
        _mm_prefetch(reinterpret_cast<const char*>(src) + 512, _MM_HINT_T0);
        U::Row(src, lv + r * U::kSuper, dw[r], mw[r]);
      }
      for (int j = 0; j < kSub; ++j, o += L::kBlockBytes) {
        __m512i q[L::kQ];
        Transpose16<U::kB>(lv + j * U::kB, U::kSuper, q);
        __m512i sum = _mm512_setzero_si512();
        for (int i = 0; i < L::kQ; ++i) {
          _mm512_store_si512(o + 64 * i, q[i]);
          sum = _mm512_dpbusd_epi32(sum, ones, q[i]);
        }
        _mm512_store_si512(o + L::kNegW, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
        float* d = reinterpret_cast<float*>(o + L::kDw);
        for (int r = 0; r < 16; ++r) d[r] = dw[r][j];
        if constexpr (U::kMin || U::kPair) {
          float* m = reinterpret_cast<float*>(o + L::kMw);
          for (int r = 0; r < 16; ++r) m[r] = mw[r][j];
        }
      }
    }
  }
}

// ---------------------------------------------------------------- pre-packed Q4_0
//
// A whole Q4_0 matrix repacked once at load (PackedWeightStore) so that
// batched calls skip PackPanel. Per group of 16 rows (missing rows zero),
// with nb = n_in / 32 blocks:
//   nb x 4 vectors: block b's qs dwords, vector q lane r = bytes [4q, 4q+4) of
//                   row r (elements 4q..4q+3 in the low, 16+4q.. in the high
//                   nibbles), at 256 * b + 64 * q
//   nb x 16 f16:    block b's scales (row r at lane r), at 256 * nb + 32 * b
// padded to a multiple of 64 bytes: exactly the bytes of Q4_0 (plus padding).
// The nibbles are the unsigned operand of vpdpbusd against signed activation
// bytes (ConvertS8); s starts at -8 * sum(q), so it ends at sum q * (nibble -
// 8), the integer the panel computes: results are bitwise those of PackPanel.

// From this many tokens a call unpacks the packed groups into the int8 panel
// first (measured: docs/PERFORMANCE.md, "Pre-packed Q4_0 weights").
constexpr int64_t kPackedPanelMinTokens = 64;

int64_t PackedQ4_0GroupBytes(int64_t n_in) { return RoundUp(n_in / 32 * 288, 64); }

void PackQ4_0Groups(const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, uint8_t* dst) {
  const int64_t nb = n_in / 32, gbytes = PackedQ4_0GroupBytes(n_in);
  std::unique_ptr<uint8_t[]> pad;
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16, dst += gbytes) {
    const int nr = static_cast<int>(std::min<int64_t>(16, n_rows - r0));
    const uint8_t* src = w + r0 * ws;
    if (nr < 16) {  // the last, partial group: a zero-padded copy
      if (!pad) pad.reset(new uint8_t[16 * ws]);
      std::memset(pad.get(), 0, 16 * ws);
      std::memcpy(pad.get(), src, nr * ws);
      src = pad.get();
    }
    std::memset(dst, 0, gbytes);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = src + b * sizeof(BlockQ4_0);
      __m512i v[4];
      Transpose16<16>(reinterpret_cast<const int8_t*>(blk + 2), ws, v);
      for (int q = 0; q < 4; ++q) _mm512_store_si512(dst + 256 * b + 64 * q, v[q]);
      uint16_t* sc = reinterpret_cast<uint16_t*>(dst + 256 * nb + 32 * b);
      for (int r = 0; r < 16; ++r) std::memcpy(sc + r, blk + r * ws, 2);
    }
  }
}

// Pre-packed Q4_0 groups (rows [0, n_rows) at p, 16 * ps bytes per group) ->
// the panel layout of PackPanel<kQ4_0>: levels nibble - 8 as s8, negw, f32
// scales. No transposes and no gathers, so large batches (prefill) can run
// the tighter PanelKernel loop for almost nothing; bitwise the same panel.
void UnpackPackedQ4_0(DType, const uint8_t* p, int64_t ps, int64_t n_rows, int64_t n_in, void* dst) {
  using L = PanelLayout<32, false>;
  const int64_t nb = n_in / 32, gs = 16 * ps;
  uint8_t* o = static_cast<uint8_t*>(dst);
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16, p += gs) {
    for (int64_t b = 0; b < nb; ++b, o += L::kBlockBytes) {
      __m512i v[4], q[8];
      for (int i = 0; i < 4; ++i) v[i] = _mm512_load_si512(p + 256 * b + 64 * i);
      SplitQ4_0Nibbles(v, q);
      const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 256 * nb + 32 * b));
      StoreBlock<32, false>(q, _mm512_maskz_cvtph_ps(0xffff, h), o);
    }
  }
}

// ---------------------------------------------------------------- compute
//
// Register tile: G groups of 16 rows x T tokens; per block, G*T int32
// accumulators start at negw and take kB/4 vpdpbusd each, then fold into
// G*T f32 accumulators. kPair (Q6_K, 16-element blocks): the blocks of a
// 32-block b fold as one, the AVX2 panel's arithmetic (matmul_int8_kquant_
// avx2.cc), so that both ISAs give bitwise the same rows:
//   f = fma(float(s_2b+1), sc_2b+1, float(s_2b) * sc_2b)   (= float(isum_b), exact: |isum_b| < 2^24)
//   acc = fma(f, d * dx_b, acc)
// with the panel's dw slot holding float(sc_j) and its mw slot d.
template <int kB, bool kMin, bool kPair>
struct PanelKernel {
  using L = PanelLayout<kB, kMin || kPair>;
  template <int G, int T>
  static void Run(const uint8_t* p, int64_t gs, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    const int64_t nb = n_in / kB, nb32 = n_in / 32;
    __m512 acc[G][T], f[G][T];
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t) acc[g][t] = f[g][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = p + b * L::kBlockBytes;
      __m512i s[G][T];
      for (int g = 0; g < G; ++g) {
        const __m512i nw = _mm512_load_si512(blk + g * gs + L::kNegW);
        for (int t = 0; t < T; ++t) s[g][t] = nw;
      }
      for (int q = 0; q < L::kQ; ++q) {
        __m512i wv[G];
        for (int g = 0; g < G; ++g) wv[g] = _mm512_load_si512(blk + g * gs + 64 * q);
        for (int t = 0; t < T; ++t) {
          int32_t a4;
          std::memcpy(&a4, act + t * as + b * kB + 4 * q, 4);
          const __m512i a = _mm512_set1_epi32(a4);
          for (int g = 0; g < G; ++g) s[g][t] = _mm512_dpbusd_epi32(s[g][t], a, wv[g]);
        }
      }
      const int64_t bx = b * kB / 32;
      __m512 dw[G];
      for (int g = 0; g < G; ++g) dw[g] = _mm512_load_ps(blk + g * gs + L::kDw);
      if constexpr (kPair) {
        if (b % 2 == 0) {
          for (int g = 0; g < G; ++g)
            for (int t = 0; t < T; ++t) f[g][t] = _mm512_mul_ps(_mm512_cvtepi32_ps(s[g][t]), dw[g]);
          continue;
        }
        for (int t = 0; t < T; ++t) {
          const __m512 dx = _mm512_set1_ps(reinterpret_cast<const float*>(act + t * as + n_in)[bx]);
          for (int g = 0; g < G; ++g) {
            const __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[g][t]), dw[g], f[g][t]);
            const __m512 d = _mm512_load_ps(blk + g * gs + L::kMw);
            acc[g][t] = _mm512_fmadd_ps(v, _mm512_mul_ps(d, dx), acc[g][t]);
          }
        }
        continue;
      }
      for (int t = 0; t < T; ++t) {
        const float* ad = reinterpret_cast<const float*>(act + t * as + n_in);
        const __m512 dx = _mm512_set1_ps(ad[bx]);
        for (int g = 0; g < G; ++g) {
          acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[g][t]), _mm512_mul_ps(dw[g], dx), acc[g][t]);
        }
        if constexpr (kMin) {
          const __m512 xs = _mm512_set1_ps(ad[nb32 + bx]);
          for (int g = 0; g < G; ++g) {
            acc[g][t] = _mm512_fmadd_ps(_mm512_load_ps(blk + g * gs + L::kMw), xs, acc[g][t]);
          }
        }
      }
    }
    for (int g = 0; g < G; ++g) {
      const int64_t valid = std::clamp<int64_t>(rows_left - 16 * g, 0, 16);
      const __mmask16 m = static_cast<__mmask16>((1u << valid) - 1);
      for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + 16 * g, m, acc[g][t]);
    }
  }
};

// The panel kernel over pre-packed Q4_0 groups (layout above): the same
// register tile, unpacking each nibble vector into two level vectors.
struct PackedQ4_0Kernel {
  template <int G, int T>
  static void Run(const uint8_t* p, int64_t gs, int64_t rows_left, const uint8_t* act, int64_t as, int64_t n_in,
                  float* y, int64_t ldy) {
    const int64_t nb = n_in / 32;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[G][T];
    for (int g = 0; g < G; ++g)
      for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      __m512i s[G][T];
      for (int t = 0; t < T; ++t) {
        const int32_t* sums = reinterpret_cast<const int32_t*>(act + t * as + n_in + 4 * nb);
        const __m512i init = _mm512_set1_epi32(-8 * sums[b]);
        for (int g = 0; g < G; ++g) s[g][t] = init;
      }
      for (int q = 0; q < 4; ++q) {
        __m512i lo[G], hi[G];
        for (int g = 0; g < G; ++g) {
          const __m512i v = _mm512_load_si512(p + g * gs + 256 * b + 64 * q);
          lo[g] = _mm512_and_si512(v, m4);
          hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        }
        for (int t = 0; t < T; ++t) {
          int32_t a_lo, a_hi;
          std::memcpy(&a_lo, act + t * as + 32 * b + 4 * q, 4);
          std::memcpy(&a_hi, act + t * as + 32 * b + 16 + 4 * q, 4);
          const __m512i xl = _mm512_set1_epi32(a_lo), xh = _mm512_set1_epi32(a_hi);
          for (int g = 0; g < G; ++g) {
            s[g][t] = _mm512_dpbusd_epi32(s[g][t], lo[g], xl);
            s[g][t] = _mm512_dpbusd_epi32(s[g][t], hi[g], xh);
          }
        }
      }
      __m512 dw[G];
      for (int g = 0; g < G; ++g) {
        dw[g] = _mm512_maskz_cvtph_ps(0xffff, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + g * gs + 256 * nb + 32 * b)));
      }
      for (int t = 0; t < T; ++t) {
        const __m512 dx = _mm512_set1_ps(reinterpret_cast<const float*>(act + t * as + n_in)[b]);
        for (int g = 0; g < G; ++g) {
          acc[g][t] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, s[g][t]), _mm512_mul_ps(dw[g], dx), acc[g][t]);
        }
      }
    }
    for (int g = 0; g < G; ++g) {
      const int64_t valid = std::clamp<int64_t>(rows_left - 16 * g, 0, 16);
      const __mmask16 m = static_cast<__mmask16>((1u << valid) - 1);
      for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + 16 * g, m, acc[g][t]);
    }
  }
};

constexpr int kTileGroups = 2;
constexpr int kTileTokens = 4;

// ps: bytes per row of the panel (a 16-row group is 16 * ps bytes). Register
// tiles of kG groups x kT tokens.
template <class K, int kG = kTileGroups, int kT = kTileTokens>
void ComputeTiles(const uint8_t* p, int64_t ps, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                  int64_t n_in, float* y, int64_t ldy) {
  GroupTileLoop<K, 16, kG, kT>(p, ps, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- plans

constexpr int64_t kPanelChunk = 64;  // rows per panel (a multiple of 16 * kTileGroups)

template <DType kType>
constexpr Plan MakePlan() {
  using U = Unpack<kType>;
  return {U8ActBytes, ConvertU8, PanelLayout<U::kB, U::kMin || U::kPair>::RowBytes, PackPanel<kType>,
          ComputeTiles<PanelKernel<U::kB, U::kMin, U::kPair>>, kPanelChunk, "avx512/int8-panel"};
}

const Plan kQ4_0 = MakePlan<DType::kQ4_0>();
const Plan kQ4_1 = MakePlan<DType::kQ4_1>();
const Plan kQ5_0 = MakePlan<DType::kQ5_0>();
const Plan kQ8_0 = MakePlan<DType::kQ8_0>();
const Plan kQ4_K = MakePlan<DType::kQ4_K>();
const Plan kQ5_K = MakePlan<DType::kQ5_K>();
const Plan kQ6_K = MakePlan<DType::kQ6_K>();
const Plan kPackedQ4_0 = {S8ActBytes, ConvertS8, nullptr, nullptr, ComputeTiles<PackedQ4_0Kernel>, kPanelChunk,
                             "avx512/packed-gemv"};
// Large batches: unpack each chunk of the packed groups into the panel, then
// the panel kernel (no unpacking in the inner loop).
const Plan kPackedQ4_0Panel = {U8ActBytes, ConvertU8, PanelLayout<32, false>::RowBytes, UnpackPackedQ4_0,
                               ComputeTiles<PanelKernel<32, false, false>>, kPanelChunk,
                               "avx512/packed-panel"};

}  // namespace

const Plan* Avx512Int8PanelPlan(DType type) {
  switch (type) {
    case DType::kQ4_0: return &kQ4_0;
    case DType::kQ4_1: return &kQ4_1;
    case DType::kQ5_0: return &kQ5_0;
    case DType::kQ8_0: return &kQ8_0;
    case DType::kQ4_K: return &kQ4_K;
    case DType::kQ5_K: return &kQ5_K;
    case DType::kQ6_K: return &kQ6_K;
    default: return nullptr;
  }
}

// Q4_K / Q6_K: the packed kernels below this many tokens, null from it (MatMul then
// runs the panel on the checkpoint's rows, bitwise the same). Packed / panel,
// wall time, two threads, 2048x2048 and 8192x2048 (AMD EPYC Zen 5): 2.1-2.7x
// at 12-16 tokens, 1.33-1.55x at 24-32, 0.99-1.11x at 48-64, 0.83-0.88x at 128.
constexpr int64_t kPackedQ4KPanelMinTokens = 64;
// Q6_K packed / panel, the same runs: 1.78-1.80x at 8, 1.08-1.15x at 16,
// 0.75-0.85x at 32.
constexpr int64_t kPackedQ6KPanelMinTokens = 24;

const Plan* Avx512PackedPlan(DType type, int64_t n_tokens) {
  if (type == DType::kQ4_K) return n_tokens < kPackedQ4KPanelMinTokens ? Avx512PackedKPlan(type) : nullptr;
  if (type == DType::kQ6_K) return n_tokens < kPackedQ6KPanelMinTokens ? Avx512PackedKPlan(type) : nullptr;
  if (type != DType::kQ4_0) return nullptr;
  return n_tokens >= kPackedPanelMinTokens ? &kPackedQ4_0Panel : &kPackedQ4_0;
}

int64_t Avx512PackedBytes(DType type, int64_t n_rows, int64_t n_in) {
  if (type == DType::kQ4_K || type == DType::kQ6_K) return Avx512PackedKBytes(type, n_rows, n_in);
  if (type != DType::kQ4_0 || n_in % 32 != 0) return 0;
  return (n_rows + 15) / 16 * PackedQ4_0GroupBytes(n_in);
}

int64_t Avx512PackedRowStride(DType type, int64_t n_in) {
  if (type == DType::kQ4_K || type == DType::kQ6_K) return Avx512PackedKBytes(type, 16, n_in) / 16;
  return type == DType::kQ4_0 ? PackedQ4_0GroupBytes(n_in) / 16 : 0;
}

void Avx512PackRows(DType type, const uint8_t* w, int64_t w_stride, int64_t n_rows, int64_t n_in, uint8_t* dst) {
  if (type == DType::kQ4_K || type == DType::kQ6_K) return Avx512PackKRows(type, w, w_stride, n_rows, n_in, dst);
  PAGODA_CHECK(type == DType::kQ4_0) << "no packed layout for " << DTypeName(type);
  PackQ4_0Groups(w, w_stride, n_rows, n_in, dst);
}

}  // namespace pagoda::kernels::internal
