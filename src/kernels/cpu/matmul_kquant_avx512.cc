// AVX-512 decode plans for the K-quants (Q4_K, Q5_K, Q6_K): integer dot
// products against activations quantized per 256-block ("Q8K" below).
//
// Activation layout, per 256-block (kActBytes = 320, 64-byte multiple):
//   int8  qs[256]     round(x / d), |q| <= 127, linear order
//   int16 bsum[16]    sum of qs over each 16-element group
//   f32   d           amax / 127
// Error: activation rounding only, |dx| <= amax_256 / 254.
//
// Every weight layout is unpacked into four zmm "chunks" of 64 u8 levels in
// linear element order, so one chunk multiplies 64 consecutive activations:
//   vpmaddubsw (u8 level x s8 act -> s16 pairs), then vpdpwssd against a
//   vector of per-sub-block scales (s16) accumulates s32 per super-block.
// Offsets (Q4_K/Q5_K min, Q6_K's -32) are folded in through the bsums, so the
// weights stay unsigned and no per-element correction is needed.
// Bounds: pair sums <= 2*63*127 (no vpmaddubsw saturation); |s32| < 2^25.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/matmul_internal.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

constexpr int64_t kActBytes = 320;
constexpr int64_t kBsumOff = 256;
constexpr int64_t kDOff = 288;

int64_t Q8KBytes(int64_t n_in) { return n_in / kQK_K * kActBytes; }

void ConvertQ8K(const float* x, int64_t n_in, void* dst) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n_in / kQK_K; ++b, x += kQK_K, out += kActBytes) {
    __m512 amax = _mm512_setzero_ps();
    for (int i = 0; i < 16; ++i) amax = _mm512_max_ps(amax, _mm512_abs_ps(_mm512_loadu_ps(x + 16 * i)));
    const float d = _mm512_reduce_max_ps(amax) / 127.0f;
    const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    int16_t bsum[16];
    for (int i = 0; i < 16; ++i) {
      __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16 * i), id));
      q = _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16 * i), _mm512_cvtepi32_epi8(q));
      bsum[i] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    std::memcpy(out + kBsumOff, bsum, sizeof(bsum));
    std::memcpy(out + kDOff, &d, sizeof(d));
    std::memset(out + kDOff + 4, 0, kActBytes - kDOff - 4);
  }
}

inline float ActD(const uint8_t* a) {
  float d;
  std::memcpy(&d, a + kDOff, sizeof(d));
  return d;
}

// vpshufb control building s16 words from bytes of a broadcast vector: 128-bit
// lane L of the result holds byte sel(L) in every word, zero- or (when
// kHigh) placed in the high byte for a later arithmetic shift.
template <bool kHigh>
inline __m512i WordCtrl(int l0, int l1, int l2, int l3) {
  const int sel[4] = {l0, l1, l2, l3};
  alignas(64) uint8_t c[64];
  for (int l = 0; l < 4; ++l) {
    for (int i = 0; i < 8; ++i) {
      c[16 * l + 2 * i] = kHigh ? 0x80 : static_cast<uint8_t>(sel[l]);
      c[16 * l + 2 * i + 1] = kHigh ? static_cast<uint8_t>(sel[l]) : 0x80;
    }
  }
  return _mm512_load_si512(c);
}

// Q4_K/Q5_K 6-bit scales and mins: sc[0..7] and m[0..7] as 8 bytes each.
inline void ScalesMinsK4(const uint8_t* s, uint64_t* sc, uint64_t* m) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, s, 4);
  std::memcpy(&w1, s + 4, 4);
  std::memcpy(&w2, s + 8, 4);
  const uint32_t sc_lo = w0 & 0x3f3f3f3f, m_lo = w1 & 0x3f3f3f3f;
  const uint32_t sc_hi = (w2 & 0x0f0f0f0f) | ((w0 >> 2) & 0x30303030);
  const uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0f) | ((w1 >> 2) & 0x30303030);
  *sc = sc_lo | (static_cast<uint64_t>(sc_hi) << 32);
  *m = m_lo | (static_cast<uint64_t>(m_hi) << 32);
}

// Q4_K and Q5_K: x = d*sc_j*q - dmin*m_j over sub-blocks j of 32.
// chunk c = [low nibbles of qs[32c..32c+32) | high nibbles] = elements [64c, 64c+64).
template <bool kQ5>
struct K4Kernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    static_assert(R == 1);
    using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i ctrl[4] = {WordCtrl<false>(0, 0, 1, 1), WordCtrl<false>(2, 2, 3, 3), WordCtrl<false>(4, 4, 5, 5),
                             WordCtrl<false>(6, 6, 7, 7)};
    __m512 acc[T];
    __m256 accm[T];
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm512_setzero_ps();
      accm[t] = _mm256_setzero_ps();
    }
    const Block* blk = reinterpret_cast<const Block*>(w);
    const int64_t nsb = n_in / kQK_K;
    for (int64_t i = 0; i < nsb; ++i) {
      const Block* b = blk + i;
      _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0);
      uint64_t sc8, m8;
      ScalesMinsK4(b->scales, &sc8, &m8);
      const __m512i scb = _mm512_set1_epi64(static_cast<long long>(sc8));
      const __m128i mb = _mm_cvtsi64_si128(static_cast<long long>(m8));
      const __m256i mdup = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb));  // m0 m0 m1 m1 ...
      __m512i wq[4], sw[4];
      for (int c = 0; c < 4; ++c) {
        const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * c)));
        wq[c] = _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFFFF0000u, v, 4), m4);
        sw[c] = _mm512_shuffle_epi8(scb, ctrl[c]);
      }
      if constexpr (kQ5) {
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh)));
        const __m512i sixteen = _mm512_set1_epi8(16);
        for (int c = 0; c < 4; ++c) {
          const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * c))),
                                                 _mm256_set1_epi8(static_cast<char>(1 << (2 * c + 1))), 1);
          wq[c] = _mm512_mask_add_epi8(wq[c], _mm512_test_epi8_mask(qh, bit), wq[c], sixteen);
        }
      }
      const float d = _cvtsh_ss(b->d), dmin = _cvtsh_ss(b->dmin);
      for (int t = 0; t < T; ++t) {
        const uint8_t* a = act + t * as + i * kActBytes;
        __m512i s = _mm512_setzero_si512();
        for (int c = 0; c < 4; ++c) {
          const __m512i p = _mm512_maddubs_epi16(wq[c], _mm512_loadu_si512(a + 64 * c));
          s = _mm512_dpwssd_epi32(s, p, sw[c]);
        }
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + kBsumOff));
        const __m256i ms = _mm256_madd_epi16(bs, mdup);
        const float da = ActD(a);
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(d * da), acc[t]);
        accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_set1_ps(dmin * da), accm[t]);
      }
    }
    for (int t = 0; t < T; ++t) {
      const __m256 m = accm[t];
      const __m128 m2 = _mm_add_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
      const __m128 m1 = _mm_add_ps(m2, _mm_movehl_ps(m2, m2));
      const float mins = _mm_cvtss_f32(_mm_add_ss(m1, _mm_movehdup_ps(m1)));
      y[t * ldy] = _mm512_reduce_add_ps(acc[t]) - mins;
    }
  }
};

// Q6_K: x = d*sc_j*(q - 32) over sub-blocks j of 16, q = ql nibble | qh 2 bits << 4.
// Half n (128 elements): ql[64n..64n+64) low nibbles -> elements [0, 64),
// high nibbles -> [64, 128); qh[32n..32n+32) bit pairs 0,1 / 2,3 / 4,5 / 6,7
// give the high bits of elements l, 32+l, 64+l, 96+l.
struct Q6KKernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    static_assert(R == 1);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i ctrl[4] = {WordCtrl<true>(0, 1, 2, 3), WordCtrl<true>(4, 5, 6, 7), WordCtrl<true>(8, 9, 10, 11),
                             WordCtrl<true>(12, 13, 14, 15)};
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(w);
    const int64_t nsb = n_in / kQK_K;
    for (int64_t i = 0; i < nsb; ++i) {
      const BlockQ6_K* b = blk + i;
      _mm_prefetch(reinterpret_cast<const char*>(b + 6), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + 6) + 128, _MM_HINT_T0);
      __m512i wq[4], sw[4];
      for (int n = 0; n < 2; ++n) {
        const __m512i l = _mm512_loadu_si512(b->ql + 64 * n);
        __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * n)));
        h = _mm512_mask_srli_epi16(h, 0xFFFF0000u, h, 2);  // upper half: bit pairs 2,3 / 6,7
        wq[2 * n] = _mm512_or_si512(_mm512_and_si512(l, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
        wq[2 * n + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), m4), _mm512_and_si512(h, m30));
      }
      const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
      const __m512i scb = _mm512_broadcast_i32x4(sc);
      for (int k = 0; k < 4; ++k) sw[k] = _mm512_srai_epi16(_mm512_shuffle_epi8(scb, ctrl[k]), 8);
      const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
      const float d = _cvtsh_ss(b->d);
      for (int t = 0; t < T; ++t) {
        const uint8_t* a = act + t * as + i * kActBytes;
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + kBsumOff));
        // Starts at -32 * sum_j sc_j * bsum_j: the offset of the unsigned levels.
        __m512i s = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(),
                                                            _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5)));
        for (int k = 0; k < 4; ++k) {
          const __m512i p = _mm512_maddubs_epi16(wq[k], _mm512_loadu_si512(a + 64 * k));
          s = _mm512_dpwssd_epi32(s, p, sw[k]);
        }
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_set1_ps(d * ActD(a)), acc[t]);
      }
    }
    for (int t = 0; t < T; ++t) y[t * ldy] = _mm512_reduce_add_ps(acc[t]);
  }
};

template <class K, int T, int t>
inline void RunTok(int nt, const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y,
                   int64_t ldy) {
  if constexpr (t >= 1) {
    if (nt == t) return K::template Run<1, t>(w, ws, act, as, n_in, y, ldy);
    RunTok<K, T, t - 1>(nt, w, ws, act, as, n_in, y, ldy);
  }
}

// Rows one at a time (the weight stream is sequential), up to 4 tokens each.
template <class K>
void ComputeK(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
              int64_t n_in, float* y, int64_t ldy) {
  for (int64_t t0 = 0; t0 < n_tok; t0 += 4) {
    const int nt = static_cast<int>(std::min<int64_t>(4, n_tok - t0));
    for (int64_t r = 0; r < n_rows; ++r) {
      RunTok<K, 4, 4>(nt, w + r * ws, ws, act + t0 * as, as, n_in, y + t0 * ldy + r, ldy);
    }
  }
}

constexpr int64_t kDecodeChunk = 16;

const Plan kQ4K = {Q8KBytes, ConvertQ8K, nullptr, nullptr, ComputeK<K4Kernel<false>>, kDecodeChunk,
                   "avx512/q8k-gemv"};
const Plan kQ5K = {Q8KBytes, ConvertQ8K, nullptr, nullptr, ComputeK<K4Kernel<true>>, kDecodeChunk,
                   "avx512/q8k-gemv"};
const Plan kQ6K = {Q8KBytes, ConvertQ8K, nullptr, nullptr, ComputeK<Q6KKernel>, kDecodeChunk,
                   "avx512/q8k-gemv"};

}  // namespace

const Plan* Avx512KQuantDecodePlan(DType type) {
  switch (type) {
    case DType::kQ4_K: return &kQ4K;
    case DType::kQ5_K: return &kQ5K;
    case DType::kQ6_K: return &kQ6K;
    default: return nullptr;
  }
}

}  // namespace pagoda::kernels::internal
