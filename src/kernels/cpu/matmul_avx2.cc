// AVX2 + FMA + F16C MatMul plans, for CPUs without AVX-512 (Zen 3).
//
// Every kAuto choice here is batch invariant: a token's output row is
// bitwise the same whatever n_tokens the call has (the server's batch- and
// cache-invariance rest on it; MatMulBatchInvarianceAvx2Test):
//  * Q4_0/Q4_1/Q5_0/Q8_0: the int8 panel of matmul_int8_avx2.cc (8 rows per
//    ymm, per-32 Q8 activations, vpmaddubsw + vpmaddwd), with a fused kernel
//    of the same arithmetic for small batches. 1.0-1.3x the old Q8 GEMV at
//    1 token, 1.4-4x the f32 GEMM from 8 tokens (docs/PERFORMANCE.md, "AVX2
//    int8 panel"). Error: activation rounding, |dx| <= amax_blk / 254.
//  * Q4_K/Q5_K/Q6_K: the same int8 panel and fused kernel pair
//    (matmul_int8_kquant_avx2.cc; sub-block scales and mins per 32 (Q6_K:
//    per 16, in the integer sum)). The q8k GEMV of matmul_kquant_avx2.cc
//    (per-256 activations, its own f32 order) is kept for kLegacy.
//  * F32/F16/BF16: weights widened to f32, f32 FMA, in the wide plans
//    below kGemmMinTokens and the f32 GEMM from it; both run WideKernel on
//    the same f32 weight values (widened here, or dequantized exactly into
//    the panel), the tail with an explicit fma, so they agree bitwise.
//
// Kept for A/B runs (BatchPath kLegacy, the choice before the panel; kGemm):
//  * the Q8 GEMV below: activations -> Q8 per 32-block, vpmaddubsw +
//    vpmaddwd, one f32 FMA per block into 8 lanes, offsets / Q4_1 min via
//    the activation sum, Q8_0 with the sign trick (|w| x sign(a, w));
//  * the f32 GEMM: a chunk of weight rows dequantized to an f32 panel (the
//    reference dequantizer), then a 3-row x 4-token f32 FMA register tile.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/matmul_tile_loop.h"
#include "kernels/cpu/q8_block_avx2.h"
#include "kernels/cpu/quantize.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

// F32/F16/BF16: the wide f32 plans below this many tokens, GEMM from it.
constexpr int64_t kGemmMinTokens = 8;

inline float Hsum(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// ---------------------------------------------------------------- f32 activations

int64_t F32Bytes(int64_t n_in) { return n_in * 4; }
void CopyF32(const float* x, int64_t n_in, void* dst) { std::memcpy(dst, x, n_in * sizeof(float)); }

template <DType kType>
inline __m256 Load8(const uint8_t* row, int64_t k) {
  if constexpr (kType == DType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  } else if constexpr (kType == DType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  } else {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
}

template <DType kType>
inline float Load1(const uint8_t* row, int64_t k) {
  if constexpr (kType == DType::kF32) {
    return reinterpret_cast<const float*>(row)[k];
  } else if constexpr (kType == DType::kF16) {
    return _cvtsh_ss(reinterpret_cast<const uint16_t*>(row)[k]);
  } else {
    const uint32_t b = static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(row)[k]) << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
}

// F32/F16/BF16 rows (also the prefill f32 panel): acc[r][t] over k in 8s.
template <DType kType>
struct WideKernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    __m256 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= n_in; k += 8) {
      __m256 wv[R];
      for (int r = 0; r < R; ++r) wv[r] = Load8<kType>(w + r * ws, k);
      for (int t = 0; t < T; ++t) {
        const __m256 a = _mm256_loadu_ps(reinterpret_cast<const float*>(act + t * as) + k);
        for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], a, acc[r][t]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < T; ++t) {
        float s = Hsum(acc[r][t]);
        const float* a = reinterpret_cast<const float*>(act + t * as);
        // An explicit fma: left to -ffp-contract, the F16/BF16 rows (widened
        // here) and their f32 panel (kGemmPacked) came out different.
        for (int64_t j = k; j < n_in; ++j) s = std::fma(Load1<kType>(w + r * ws, j), a[j], s);
        y[t * ldy + r] = s;
      }
    }
  }
};

template <DType kType>
void ComputeWide(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                 int64_t n_in, float* y, int64_t ldy) {
  TileLoop<WideKernel<kType>, 4, 2>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- Q8 activations
//
// Layout for n_in = 32 * nb: int8 qs[n_in] (linear), f32 d[nb], f32 ds[nb]
// (ds = d * sum(qs of the block)).

int64_t Q8Bytes(int64_t n_in) { return n_in + n_in / 32 * 8; }

void ConvertQ8(const float* x, int64_t n_in, void* dst) {
  const int64_t nb = n_in / 32;
  int8_t* qs = static_cast<int8_t*>(dst);
  float* dv = reinterpret_cast<float*>(qs + n_in);
  float* ds = dv + nb;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t sum = 0;
    const float d = QuantizeBlock32Avx2(x + 32 * b, qs + 32 * b, &sum);
    dv[b] = d;
    ds[b] = d * static_cast<float>(sum);
  }
}

// 16 bytes of nibbles -> 32 u8 levels in element order (low nibbles first).
inline __m256i Nibbles(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), m4);
}

// Bits of a 32-bit mask -> 0x10 in the matching bytes (Q5_0's fifth bit).
inline __m256i HighBits(uint32_t qh) {
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                        3, 3, 3, 3, 3, 3);
  const __m256i bits = _mm256_set1_epi64x(0x8040201008040201ll);
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), shuf);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits), _mm256_set1_epi8(16));
}

// One 32-block of weights: levels (unsigned, or signed for Q8_0), its scale,
// and the coefficient of the activation sum (-offset * d, or the Q4_1 min).
template <DType kType>
inline void LoadBlock(const uint8_t* p, __m256i* q, float* d, float* c);

template <>
inline void LoadBlock<DType::kQ4_0>(const uint8_t* p, __m256i* q, float* d, float* c) {
  const auto* b = reinterpret_cast<const BlockQ4_0*>(p);
  *q = Nibbles(b->qs);
  *d = _cvtsh_ss(b->d);
  *c = -8.0f * *d;
}

template <>
inline void LoadBlock<DType::kQ4_1>(const uint8_t* p, __m256i* q, float* d, float* c) {
  const auto* b = reinterpret_cast<const BlockQ4_1*>(p);
  *q = Nibbles(b->qs);
  *d = _cvtsh_ss(b->d);
  *c = _cvtsh_ss(b->m);
}

template <>
inline void LoadBlock<DType::kQ5_0>(const uint8_t* p, __m256i* q, float* d, float* c) {
  const auto* b = reinterpret_cast<const BlockQ5_0*>(p);
  uint32_t qh;
  std::memcpy(&qh, b->qh, 4);
  *q = _mm256_or_si256(Nibbles(b->qs), HighBits(qh));
  *d = _cvtsh_ss(b->d);
  *c = -16.0f * *d;
}

template <>
inline void LoadBlock<DType::kQ8_0>(const uint8_t* p, __m256i* q, float* d, float* c) {
  const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
  *q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs));
  *d = _cvtsh_ss(b->d);
  *c = 0.0f;
}

template <DType kType, int64_t kBlockBytes>
struct Q8Kernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    static_assert(R == 1);
    constexpr bool kSigned = kType == DType::kQ8_0;
    const int64_t nb = n_in / 32;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[T];
    float off[T];
    for (int t = 0; t < T; ++t) {
      acc[t] = _mm256_setzero_ps();
      off[t] = 0.0f;
    }
    for (int64_t b = 0; b < nb; ++b) {
      __m256i q;
      float d, c;
      _mm_prefetch(reinterpret_cast<const char*>(w + (b + 16) * kBlockBytes), _MM_HINT_T0);
      LoadBlock<kType>(w + b * kBlockBytes, &q, &d, &c);
      const __m256i uq = kSigned ? _mm256_sign_epi8(q, q) : q;
      for (int t = 0; t < T; ++t) {
        const int8_t* aq = reinterpret_cast<const int8_t*>(act + t * as);
        const float* dv = reinterpret_cast<const float*>(aq + n_in);
        __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq + 32 * b));
        if constexpr (kSigned) a = _mm256_sign_epi8(a, q);
        const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(uq, a), ones);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(d * dv[b]), acc[t]);
        if constexpr (!kSigned) off[t] += c * dv[nb + b];
      }
    }
    for (int t = 0; t < T; ++t) y[t * ldy] = Hsum(acc[t]) + off[t];
  }
};

template <DType kType, int64_t kBlockBytes>
void ComputeQ8(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
               int64_t n_in, float* y, int64_t ldy) {
  TileLoop<Q8Kernel<kType, kBlockBytes>, 1, 4>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- f32 GEMM

void PackF32(DType type, const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, void* dst) {
  float* out = static_cast<float*>(dst);
  for (int64_t r = 0; r < n_rows; ++r) {
    PAGODA_CHECK(DequantizeRow(type, w + r * ws, out + r * n_in, n_in).ok());
  }
}

void ComputeGemmF32(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                    int64_t n_in, float* y, int64_t ldy) {
  TileLoop<WideKernel<DType::kF32>, 3, 4>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- plans

constexpr int64_t kDecodeChunk = 16;
constexpr int64_t kPanelChunk = 24;

const Plan kWideF32 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kF32>, kDecodeChunk,
                        "avx2/wide-gemv"};
const Plan kWideF16 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kF16>, kDecodeChunk,
                        "avx2/wide-gemv"};
const Plan kWideBF16 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kBF16>, kDecodeChunk,
                         "avx2/wide-gemv"};
const Plan kQ8Q4_0 = {Q8Bytes, ConvertQ8, nullptr, nullptr, ComputeQ8<DType::kQ4_0, sizeof(BlockQ4_0)>,
                      kDecodeChunk, "avx2/q8-gemv"};
const Plan kQ8Q4_1 = {Q8Bytes, ConvertQ8, nullptr, nullptr, ComputeQ8<DType::kQ4_1, sizeof(BlockQ4_1)>,
                      kDecodeChunk, "avx2/q8-gemv"};
const Plan kQ8Q5_0 = {Q8Bytes, ConvertQ8, nullptr, nullptr, ComputeQ8<DType::kQ5_0, sizeof(BlockQ5_0)>,
                      kDecodeChunk, "avx2/q8-gemv"};
const Plan kQ8Q8_0 = {Q8Bytes, ConvertQ8, nullptr, nullptr, ComputeQ8<DType::kQ8_0, sizeof(BlockQ8_0)>,
                      kDecodeChunk, "avx2/q8-gemv"};
const Plan kGemmF32 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeGemmF32, kPanelChunk, "avx2/f32-gemm"};
const Plan kGemmPacked = {F32Bytes, CopyF32, F32Bytes, PackF32, ComputeGemmF32, kPanelChunk,
                          "avx2/dequant-f32-gemm"};

}  // namespace

const Plan* Avx2Plan(DType type, int64_t n_tokens, BatchPath path) {
  const bool wide_gemm = n_tokens >= kGemmMinTokens;
  if (path == BatchPath::kAuto || path == BatchPath::kPanel || path == BatchPath::kGemv) {
    if (const Plan* p = Avx2Int8PanelPlan(type, n_tokens, path)) return p;
  }
  // kLegacy: the choice before the int8 panels (Q8 / q8k GEMV below 8
  // tokens, the f32 GEMM from 8); kGemm: the f32 GEMM.
  const bool gemm = path == BatchPath::kGemm || (path == BatchPath::kLegacy && n_tokens >= kGemmMinTokens);
  switch (type) {
    case DType::kF32: return wide_gemm ? &kGemmF32 : &kWideF32;
    case DType::kF16: return wide_gemm ? &kGemmPacked : &kWideF16;
    case DType::kBF16: return wide_gemm ? &kGemmPacked : &kWideBF16;
    case DType::kQ4_0: return gemm ? &kGemmPacked : &kQ8Q4_0;
    case DType::kQ4_1: return gemm ? &kGemmPacked : &kQ8Q4_1;
    case DType::kQ5_0: return gemm ? &kGemmPacked : &kQ8Q5_0;
    case DType::kQ8_0: return gemm ? &kGemmPacked : &kQ8Q8_0;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return gemm ? &kGemmPacked : Avx2KQuantDecodePlan(type);
    default: return nullptr;
  }
}

}  // namespace pagoda::kernels::internal
