// AVX2 decode plans for the K-quants (Q4_K, Q5_K, Q6_K): integer dot
// products against activations quantized per 256-block, the same scheme as
// matmul_kquant_avx512.cc on 256-bit vectors:
//   vpmaddubsw (u8 level x s8 act -> s16 pairs), vpmaddwd against the s16
//   sub-block scale, s32 accumulation per super-block, one f32 FMA per
//   super-block; mins and Q6_K's -32 offset enter through the bsums.
//
// Activation layout, per 256-block (kActBytes = 320):
//   int8 qs[256] (linear), int16 bsum[16] (per 16 elements), f32 d (amax/127).
// Error: activation rounding only, |dx| <= amax_256 / 254.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/kquant_scales.h"
#include "kernels/cpu/matmul_internal.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

constexpr int64_t kActBytes = 320;
constexpr int64_t kBsumOff = 256;
constexpr int64_t kDOff = 288;

int64_t Q8KBytes(int64_t n_in) { return n_in / kQK_K * kActBytes; }

inline int HsumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline float Hsum(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

void ConvertQ8K(const float* x, int64_t n_in, void* dst) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < n_in / kQK_K; ++b, x += kQK_K, out += kActBytes) {
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 32; ++i) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float d = _mm_cvtss_f32(m4) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    int16_t bsum[16];
    for (int g = 0; g < 8; ++g) {  // 32 elements: two bsum groups
      __m256i q[4];
      for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * g + 8 * i), id));
      bsum[2 * g] = static_cast<int16_t>(HsumI32(_mm256_add_epi32(q[0], q[1])));
      bsum[2 * g + 1] = static_cast<int16_t>(HsumI32(_mm256_add_epi32(q[2], q[3])));
      const __m256i p8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g), _mm256_permutevar8x32_epi32(p8, perm));
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

// Q4_K and Q5_K: x = d*sc_j*q - dmin*m_j over sub-blocks j of 32. Chunk c
// (qs[32c..32c+32)): low nibbles are sub-block 2c, high nibbles 2c+1.
template <bool kQ5>
struct K4Kernel {
  template <int T>
  static void Run(const uint8_t* w, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[T], accm[T];
    for (int t = 0; t < T; ++t) acc[t] = accm[t] = _mm256_setzero_ps();
    const Block* blk = reinterpret_cast<const Block*>(w);
    for (int64_t i = 0; i < n_in / kQK_K; ++i) {
      const Block* b = blk + i;
      _mm_prefetch(reinterpret_cast<const char*>(b + 8), _MM_HINT_T0);
      uint64_t sc8, m8;
      ScalesMinsK4(b->scales, &sc8, &m8);
      const __m128i mb = _mm_cvtsi64_si128(static_cast<long long>(m8));
      const __m256i mdup = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb));  // m0 m0 m1 m1 ...
      __m256i qh;
      if constexpr (kQ5) qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh));
      __m256i s[T];
      for (int t = 0; t < T; ++t) s[t] = _mm256_setzero_si256();
      for (int c = 0; c < 4; ++c) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * c));
        __m256i lo = _mm256_and_si256(v, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if constexpr (kQ5) {
          const __m256i one = _mm256_set1_epi8(1);
          const __m256i hl = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), one);
          const __m256i hh = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), one);
          lo = _mm256_or_si256(lo, _mm256_slli_epi16(hl, 4));
          hi = _mm256_or_si256(hi, _mm256_slli_epi16(hh, 4));
        }
        const __m256i sl = _mm256_set1_epi16(static_cast<int16_t>((sc8 >> (16 * c)) & 0xFF));
        const __m256i sh = _mm256_set1_epi16(static_cast<int16_t>((sc8 >> (16 * c + 8)) & 0xFF));
        for (int t = 0; t < T; ++t) {
          const uint8_t* a = act + t * as + i * kActBytes + 64 * c;
          const __m256i pl = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
          const __m256i ph = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 32)));
          s[t] = _mm256_add_epi32(s[t], _mm256_add_epi32(_mm256_madd_epi16(pl, sl), _mm256_madd_epi16(ph, sh)));
        }
      }
      const float d = _cvtsh_ss(b->d), dmin = _cvtsh_ss(b->dmin);
      for (int t = 0; t < T; ++t) {
        const uint8_t* a = act + t * as + i * kActBytes;
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + kBsumOff));
        const float da = ActD(a);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_set1_ps(d * da), acc[t]);
        accm[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, mdup)), _mm256_set1_ps(dmin * da), accm[t]);
      }
    }
    for (int t = 0; t < T; ++t) y[t * ldy] = Hsum(acc[t]) - Hsum(accm[t]);
  }
};

// Q6_K: x = d*sc_j*(q - 32) over sub-blocks j of 16. Half n, group g (32
// elements [128n + 32g, +32)): ql nibbles and qh bit pair g, see blocks.h.
struct Q6KKernel {
  template <int T>
  static void Run(const uint8_t* w, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    const BlockQ6_K* blk = reinterpret_cast<const BlockQ6_K*>(w);
    for (int64_t i = 0; i < n_in / kQK_K; ++i) {
      const BlockQ6_K* b = blk + i;
      _mm_prefetch(reinterpret_cast<const char*>(b + 6), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(b + 6) + 128, _MM_HINT_T0);
      const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
      __m256i s[T];
      for (int t = 0; t < T; ++t) {
        // Starts at -32 * sum_j sc_j * bsum_j: the offset of the unsigned levels.
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act + t * as + i * kActBytes + kBsumOff));
        s[t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(_mm256_cvtepi8_epi16(sc), bs), 5));
      }
      for (int n = 0; n < 2; ++n) {
        const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * n));
        const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * n + 32));
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * n));
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
        q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m30));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                               _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
        for (int g = 0; g < 4; ++g) {
          const int j = 8 * n + 2 * g;  // sub-blocks j (low 128 bits), j + 1 (high)
          const __m256i sw = _mm256_set_m128i(_mm_set1_epi16(b->scales[j + 1]), _mm_set1_epi16(b->scales[j]));
          for (int t = 0; t < T; ++t) {
            const uint8_t* a = act + t * as + i * kActBytes + 128 * n + 32 * g;
            const __m256i p = _mm256_maddubs_epi16(q[g], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
            s[t] = _mm256_add_epi32(s[t], _mm256_madd_epi16(p, sw));
          }
        }
      }
      const float d = _cvtsh_ss(b->d);
      for (int t = 0; t < T; ++t) {
        const float da = ActD(act + t * as + i * kActBytes);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_set1_ps(d * da), acc[t]);
      }
    }
    for (int t = 0; t < T; ++t) y[t * ldy] = Hsum(acc[t]);
  }
};

// Rows one at a time (one sequential weight stream), up to 4 tokens each.
template <class K>
void ComputeK(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
              int64_t n_in, float* y, int64_t ldy) {
  for (int64_t t0 = 0; t0 < n_tok; t0 += 4) {
    const int64_t nt = std::min<int64_t>(4, n_tok - t0);
    const uint8_t* a = act + t0 * as;
    for (int64_t r = 0; r < n_rows; ++r) {
      float* yr = y + t0 * ldy + r;
      switch (nt) {
        case 1: K::template Run<1>(w + r * ws, a, as, n_in, yr, ldy); break;
        case 2: K::template Run<2>(w + r * ws, a, as, n_in, yr, ldy); break;
        case 3: K::template Run<3>(w + r * ws, a, as, n_in, yr, ldy); break;
        default: K::template Run<4>(w + r * ws, a, as, n_in, yr, ldy); break;
      }
    }
  }
}

constexpr int64_t kDecodeChunk = 16;

const Plan kQ4K = {Q8KBytes, ConvertQ8K, nullptr, nullptr, ComputeK<K4Kernel<false>>, kDecodeChunk,
                   "avx2/q8k-gemv"};
const Plan kQ5K = {Q8KBytes, ConvertQ8K, nullptr, nullptr, ComputeK<K4Kernel<true>>, kDecodeChunk,
                   "avx2/q8k-gemv"};
const Plan kQ6K = {Q8KBytes, ConvertQ8K, nullptr, nullptr, ComputeK<Q6KKernel>, kDecodeChunk,
                   "avx2/q8k-gemv"};

}  // namespace

const Plan* Avx2KQuantDecodePlan(DType type) {
  switch (type) {
    case DType::kQ4_K: return &kQ4K;
    case DType::kQ5_K: return &kQ5K;
    case DType::kQ6_K: return &kQ6K;
    default: return nullptr;
  }
}

}  // namespace pagoda::kernels::internal
