// AVX-512 MatMul plans (F, BW, DQ, VL, VNNI, BF16).
//
// Every kAuto choice here is batch invariant: a token's output row is
// bitwise the same whatever n_tokens the call has (the server's batch- and
// cache-invariance rest on it; tests/kernels/matmul_batch_invariance_test.cc).
//
// Quantized weights choose by batch size (BatchPath::kAuto, see ChooseQuant):
//  * n_tokens < PanelMinTokens(type) (8 for Q6_K, 12 for Q4_0, 20 for Q4_K,
//    24 for Q8_0, 16 for the rest): the fused kernels of
//    matmul_int8_fused_avx512.cc (decode, small batches), reading the weight
//    rows directly with the panel's integer sums and f32 fold.
//  * from there on, prefill included: the int8 panel ("small GEMM",
//    matmul_int8_avx512.cc): each 64-row chunk is repacked once per call into
//    16-row-interleaved s8 levels and every token reuses it (vpdpbusd, a
//    2 x 16-row by 4-token register tile). Error: activation Q8 rounding
//    only (per 32-block), as for decode. Both are bitwise the AVX2 int8
//    panel's results too (the same integer sums and fold).
//  The bf16 GEMM below is used for quantized weights only when forced
//  (BatchPath::kGemm / kLegacy); it was 1.4-2.1x slower than the panel at
//  16..256 tokens.
//  F32: the wide f32 GEMV tiles at every batch size. F16/BF16: bf16 products
//  at every batch size: the bf16 GEMM from kGemmMinTokens, below it the
//  same chain read from the weight rows (bf16-gemv), so both agree bitwise.
//
// Kept for A/B runs (BatchPath::kLegacy, the choice before the fused kernels):
//  GEMV tiles (quantized, small n; F32 always, F16/BF16 below kGemmMinTokens):
//   * Q4_0/Q5_0/Q8_0: activations -> signed Q8 (per 32-block max-abs),
//     weights as unsigned bytes, int8 dot with vpdpbusd; the weight offset
//     is removed by starting each block's accumulator at -off * sum(q_x).
//     Error: activation rounding only, |dx| <= amax_blk / 254.
//   * Q4_1: as Q4_0 without the offset; the min term m * sum(x) uses the
//     per-block activation sums (stored as f32 d_x * sum(q_x)).
//   Weight pairs are read with one wide load and software-prefetched, see
//   "Q8 activations (VNNI)" below.
//   * F32/F16/BF16: weights widened to f32, f32 FMA (exact products).
//   * Q4_K/Q5_K/Q6_K: integer dots against per-256 Q8 activations, see
//     matmul_kquant_avx512.cc.
//  bf16 GEMM (F16/BF16 from kGemmMinTokens; quantized types when forced):
//   * a chunk of weight rows is dequantized once into a bf16 panel, the
//     activations are rounded to bf16 once per call, and a 4-row x 6-token
//     register tile runs vdpbf16ps (f32 accumulate). Error: bf16 rounding of
//     both operands, relative 2^-9 each.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/dequant_avx512.h"
#include "kernels/cpu/matmul_internal.h"
#include "kernels/cpu/matmul_tile_loop.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

// Quantized weights (BatchPath::kAuto): the fused kernels below
// PanelMinTokens(type), the int8 panel from there on; both are one
// arithmetic, so the switch does not change a token's row. Crossovers
// measured as wall time with two threads, fused / panel on the 2048x2048 and
// 8192x2048 shapes (AMD EPYC Zen 5, docs/PERFORMANCE.md "AVX-512 fused
// kernels"): the panel's per-call repack costs about 1-2 fused passes over
// the weights and its per-token cost is ~2-3x lower. The bf16 GEMM is
// 1.4-2.1x slower than the panel at 16..256 tokens, so kAuto does not use it
// for quantized weights (BatchPath::kGemm still forces it).
int64_t PanelMinTokens(DType type) {
  switch (type) {
    case DType::kQ4_0: return 12;  // panel/fused 0.91-0.99x at 8, 1.24-1.30x at 12
    case DType::kQ8_0: return 24;  // 0.92-0.99x at 16, 1.26-1.29x at 24
    case DType::kQ4_K: return 20;  // 0.89-0.92x at 16, 1.14-1.22x at 24
    case DType::kQ6_K: return 8;   // 0.62-0.64x at 4, 0.98-1.05x at 8, 1.29-1.43x at 12
    default: return 16;            // Q5_K 0.97-1.12x at 16, 0.78-0.91x at 12
  }
}
// F32/F16/BF16: the wide f32 plans below this many tokens, GEMM from it.
constexpr int64_t kGemmMinTokens = 8;

inline int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }
inline __mmask16 TailMask16(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

// ---------------------------------------------------------------- f32 activations

int64_t F32Bytes(int64_t n_in) { return n_in * 4; }
void CopyF32(const float* x, int64_t n_in, void* dst) { std::memcpy(dst, x, n_in * sizeof(float)); }

// Weights widened to f32 in registers: F32, F16, BF16.
template <DType kType>
inline __m512 LoadWide(const uint8_t* row, int64_t k, __mmask16 m) {
  if constexpr (kType == DType::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + k);
  } else if constexpr (kType == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + k));
  } else {
    const __m256i v = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + k);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
  }
}
template <DType kType>
inline __m512 LoadWide(const uint8_t* row, int64_t k) {
  if constexpr (kType == DType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + k);
  } else if constexpr (kType == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + k)));
  } else {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
  }
}

template <DType kType>
struct WideKernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= n_in; k += 16) {
      __m512 wv[R];
      for (int r = 0; r < R; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(w + r * ws) + (k + 256) * sizeof(float) / (kType == DType::kF32 ? 1 : 2), _MM_HINT_T0);
        wv[r] = LoadWide<kType>(w + r * ws, k);
      }
      for (int t = 0; t < T; ++t) {
        const __m512 a = _mm512_loadu_ps(reinterpret_cast<const float*>(act + t * as) + k);
        for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], a, acc[r][t]);
      }
    }
    if (k < n_in) {
      const __mmask16 m = TailMask16(n_in - k);
      __m512 wv[R];
      for (int r = 0; r < R; ++r) wv[r] = LoadWide<kType>(w + r * ws, k, m);
      for (int t = 0; t < T; ++t) {
        const __m512 a = _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(act + t * as) + k);
        for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], a, acc[r][t]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

template <DType kType>
void ComputeWide(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                 int64_t n_in, float* y, int64_t ldy) {
  TileLoop<WideKernel<kType>, 4, 4>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- Q8 activations (VNNI)
//
// Activations are quantized per 32-block (max-abs, d = amax / 127, signed
// int8) and stored per pair of blocks as qs[64], then f32 dv[16] (the
// activation scale of the block owning each int32 lane of the weight vector),
// then i32 init[16] (the accumulator start of that pair, see below): 192 bytes.
//
// Weight vectors hold a pair of blocks in "nibble order" (Q4_0/Q4_1/Q5_0:
// a[0:16), b[0:16), a[16:32), b[16:32)) or "linear order" (Q8_0: a, b).
// vpdpbusd multiplies unsigned (weight) by signed (activation) bytes:
//  * Q4_0/Q5_0: weights are the raw unsigned levels q (0..15 / 0..31);
//    sum q*a = sum (q - off)*a + off*sum(a), so each block's lanes start at
//    -off*sum(a) (init, lanes 0 and 4) and the offset cancels.
//  * Q8_0 (kOff = 128): weights flipped to u8 = q + 128 with one xor; init
//    holds -128*sum(a) (lanes 0 and 8).
//  * Q4_1 (kOff = -1): unsigned levels, no offset; the init slot holds f32
//    d_x * sum(q_x) per block (lanes 0 and 4), multiplied by the weight min.
// An odd last block is paired with a zero block (zero weights, scale 0).
//
// Decode is bound by the weight stream, so each pair of a row is read with
// one unmasked 64-byte load while 64 bytes of the row are left (LoadWide,
// plus a software prefetch kPrefetchBytes ahead); vpermw moves the quants
// into the lane order above and the two fp16 scales into a vector of 16 that
// vcvtph2ps widens (no scalar work per pair). The last one or two pairs of a
// row read only their own bytes (LoadSafe), so no load leaves the tensor.
// Measured on the 1B Llama Q4_0 (AMD Zen 5, 2 threads): decode MatMuls went
// from ~16 to ~25 GB/s of weights; masked wide loads were slower than the old
// 16-byte loads there (cache-missing masked loads stall).

constexpr int64_t kQ8PairBytes = 192;
// Software prefetch distance along each weight row: decode reads every row
// once from DRAM, and the rows of a tile are short streams (~1 KiB for
// n_in = 2048) that the hardware prefetcher alone ramps up on too late.
// 256 beat 128, 512 and 768 on the 1B Q4_0 decode.
constexpr int kPrefetchBytes = 256;

template <int kOff>
constexpr bool NibbleOrder() { return kOff != 128; }

int64_t Q8Bytes(int64_t n_in) { return (n_in + 63) / 64 * kQ8PairBytes; }

inline void QuantBlock32(const float* x, float* d_out, __m128i* q_lo, __m128i* q_hi, int* sum) {
  const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
  const __m512 amax = _mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1));
  const float m = _mm512_reduce_max_ps(amax);
  const float d = m / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, id));
  const __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, id));
  *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
  *q_lo = _mm512_cvtsepi32_epi8(i0);
  *q_hi = _mm512_cvtsepi32_epi8(i1);
  *d_out = d;
}

template <int kOff>
void ConvertQ8(const float* x, int64_t n_in, void* dst) {
  constexpr bool kNibble = NibbleOrder<kOff>();
  uint8_t* out = static_cast<uint8_t*>(dst);
  const int64_t nb = n_in / 32;
  for (int64_t b = 0; b < nb; b += 2) {
    __m128i a_lo, a_hi, b_lo = _mm_setzero_si128(), b_hi = b_lo;
    float da, db = 0.0f;
    int sa, sb = 0;
    QuantBlock32(x + 32 * b, &da, &a_lo, &a_hi, &sa);
    if (b + 1 < nb) QuantBlock32(x + 32 * (b + 1), &db, &b_lo, &b_hi, &sb);
    __m128i* q = reinterpret_cast<__m128i*>(out);
    _mm_storeu_si128(q + 0, a_lo);
    _mm_storeu_si128(q + (kNibble ? 2 : 1), a_hi);
    _mm_storeu_si128(q + (kNibble ? 1 : 2), b_lo);
    _mm_storeu_si128(q + 3, b_hi);
    const __mmask16 bmask = kNibble ? 0xF0F0 : 0xFF00;
    _mm512_storeu_ps(reinterpret_cast<float*>(out + 64),
                     _mm512_mask_blend_ps(bmask, _mm512_set1_ps(da), _mm512_set1_ps(db)));
    constexpr int kLaneB = kNibble ? 4 : 8;
    if constexpr (kOff < 0) {
      alignas(64) float sums[16] = {};
      sums[0] = da * static_cast<float>(sa);
      sums[kLaneB] = db * static_cast<float>(sb);
      std::memcpy(out + 128, sums, sizeof(sums));
    } else {
      alignas(64) int32_t init[16] = {};
      init[0] = -kOff * sa;
      init[kLaneB] = -kOff * sb;
      std::memcpy(out + 128, init, sizeof(init));
    }
    out += kQ8PairBytes;
  }
}

// vpermw index vectors for one weight format, in 16-bit words of a pair
// loaded from its first byte (block a at word 0, block b at word kBlockWords).
template <int kBlockWords, int kQsWord, int kScaleWord, bool kNibble>
struct PairIndex {
  static constexpr int kB = kBlockWords;
  // 32 words of quants in the lane order of the activations.
  static constexpr auto kQs = [] {
    std::array<uint16_t, 32> v{};
    for (int j = 0; j < 32; ++j) {
      const int block = kNibble ? (j / 8) & 1 : j / 16;
      v[j] = static_cast<uint16_t>(block * kB + kQsWord + (kNibble ? j % 8 : j % 16));
    }
    return v;
  }();
  // Words 0..15: the fp16 scale of the block owning int32 lane i (16..31 unused).
  static constexpr auto kScale = [] {
    std::array<uint16_t, 32> v{};
    for (int i = 0; i < 16; ++i) v[i] = static_cast<uint16_t>((kNibble ? (i >> 2) & 1 : i >> 3) * kB + kScaleWord);
    return v;
  }();
};

template <size_t N>
inline __m512i LoadIdx(const std::array<uint16_t, N>& a) {
  return _mm512_loadu_si512(a.data());
}

inline __m512 WidenScales(__m512i idx, __m512i v) {
  return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, v)));
}

// Helpers of LoadSafe (below), which reads only the bytes of a pair.
// Per-lane scales of a pair from the two fp16 block scales.
inline __m512 PairScales(Half da, Half db, bool nibble) {
  const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(da | (static_cast<uint32_t>(db) << 16))));
  const __m512i idx = nibble ? _mm512_set_epi32(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0)
                             : _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(f));
}

inline __m512i NibblePair(const uint8_t* qa, const uint8_t* qb_or_null) {
  const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qa));
  const __m128i vb = qb_or_null ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(qb_or_null)) : _mm_setzero_si128();
  const __m256i v = _mm256_set_m128i(vb, va);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(v, m4)),
                            _mm256_and_si256(_mm256_srli_epi16(v, 4), m4), 1);
}

// Q5_0: adds 16 to the levels whose fifth bit (qh of blocks a, b) is set.
inline __m512i AddHighBitsQ5_0(__m512i u, const uint8_t* a, bool pair) {
  uint32_t ha, hb = 0;
  std::memcpy(&ha, a + 2, 4);
  if (pair) std::memcpy(&hb, a + sizeof(BlockQ5_0) + 2, 4);
  const uint64_t hm = (ha & 0xFFFFull) | (static_cast<uint64_t>(hb & 0xFFFF) << 16) |
                      (static_cast<uint64_t>(ha >> 16) << 32) | (static_cast<uint64_t>(hb >> 16) << 48);
  return _mm512_mask_add_epi8(u, hm, u, _mm512_set1_epi8(16));
}

// Loads one weight pair into quants wq (unsigned, in activation lane order),
// per-lane scales dw and, for Q4_1, per-lane mins mw.
//  * LoadWide: one unmasked 64-byte load from the first byte of the pair;
//    the caller guarantees 64 readable bytes (the pair and what follows it in
//    the row). Masked loads are avoided: on some cores (AMD Zen) a masked load
//    that misses the cache stalls far longer than a plain one.
//  * LoadSafe: reads the pair's bytes only; pair is false for an odd last
//    block (block b reads as zeros).
template <DType kType>
struct PairLoader;

// Q4_0, Q4_1, Q5_0: d at word 0, Q4_1 m at word 1, Q5_0 qh at bytes 2..5.
template <DType kType, int kBlockWords, int kQsWord>
struct NibblePairLoader {
  using Block = std::conditional_t<kType == DType::kQ4_0, BlockQ4_0,
                                   std::conditional_t<kType == DType::kQ4_1, BlockQ4_1, BlockQ5_0>>;
  static constexpr int64_t kBlockBytes = 2 * kBlockWords;
  static_assert(sizeof(Block) == kBlockBytes);
  using Idx = PairIndex<kBlockWords, kQsWord, 0, true>;
  using MinIdx = PairIndex<kBlockWords, kQsWord, 1, true>;
  __m512i qs_idx = LoadIdx(Idx::kQs), sc_idx = LoadIdx(Idx::kScale), mn_idx = LoadIdx(MinIdx::kScale);
  __m512i m4 = _mm512_set1_epi8(0x0F);

  inline void LoadWide(const uint8_t* a, __m512i* wq, __m512* dw, __m512* mw) const {
    const __m512i v = _mm512_loadu_si512(a);
    const __m512i q = _mm512_permutexvar_epi16(qs_idx, v);
    __m512i u = _mm512_and_si512(_mm512_mask_srli_epi16(q, 0xFFFF0000u, q, 4), m4);
    if constexpr (kType == DType::kQ5_0) u = AddHighBitsQ5_0(u, a, true);
    *wq = u;
    *dw = WidenScales(sc_idx, v);
    if constexpr (kType == DType::kQ4_1) *mw = WidenScales(mn_idx, v);
  }

  inline void LoadSafe(const uint8_t* a, bool pair, __m512i* wq, __m512* dw, __m512* mw) const {
    const auto* ba = reinterpret_cast<const Block*>(a);
    __m512i u = NibblePair(ba->qs, pair ? ba[1].qs : nullptr);
    if constexpr (kType == DType::kQ5_0) u = AddHighBitsQ5_0(u, a, pair);
    *wq = u;
    *dw = PairScales(ba->d, pair ? ba[1].d : 0, true);
    if constexpr (kType == DType::kQ4_1) *mw = PairScales(ba->m, pair ? ba[1].m : 0, true);
  }
};

template <>
struct PairLoader<DType::kQ4_0> : NibblePairLoader<DType::kQ4_0, 9, 1> {};
template <>
struct PairLoader<DType::kQ4_1> : NibblePairLoader<DType::kQ4_1, 10, 2> {};
template <>
struct PairLoader<DType::kQ5_0> : NibblePairLoader<DType::kQ5_0, 11, 3> {};

// Q8_0: a full pair is 68 bytes, so its first 64 always hold both scales.
template <>
struct PairLoader<DType::kQ8_0> {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ8_0);
  using Idx = PairIndex<17, 1, 0, false>;
  __m512i sc_idx = LoadIdx(Idx::kScale);
  __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));

  inline void LoadWide(const uint8_t* a, __m512i* wq, __m512* dw, __m512*) const {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2));
    const __m256i qb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + kBlockBytes + 2));
    *wq = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(qa), qb, 1), flip);
    *dw = WidenScales(sc_idx, _mm512_loadu_si512(a));
  }

  inline void LoadSafe(const uint8_t* a, bool pair, __m512i* wq, __m512* dw, __m512* mw) const {
    if (pair) return LoadWide(a, wq, dw, mw);
    const auto* ba = reinterpret_cast<const BlockQ8_0*>(a);
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ba->qs));
    *wq = _mm512_zextsi256_si512(_mm256_xor_si256(qa, _mm256_set1_epi8(static_cast<char>(0x80))));
    *dw = PairScales(ba->d, 0, false);
  }
};

template <DType kType, int kOff>
struct VnniKernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    using Loader = PairLoader<kType>;
    constexpr int64_t kBB = Loader::kBlockBytes;
    const Loader loader;
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    // kWide: pair loaded with LoadWide, else LoadSafe.
    const auto step = [&]<bool kWide>(int64_t b, int64_t p, bool pair) {
      __m512i wq[R];
      __m512 dw[R], mw[R];
      for (int r = 0; r < R; ++r) {
        const uint8_t* wr = w + r * ws + b * kBB;
        if constexpr (kWide) {
          _mm_prefetch(reinterpret_cast<const char*>(wr) + kPrefetchBytes, _MM_HINT_T0);
          loader.LoadWide(wr, &wq[r], &dw[r], &mw[r]);
        } else {
          loader.LoadSafe(wr, pair, &wq[r], &dw[r], &mw[r]);
        }
      }
      for (int t = 0; t < T; ++t) {
        const uint8_t* ap = act + t * as + p * kQ8PairBytes;
        const __m512i aq = _mm512_loadu_si512(ap);
        const __m512 dv = _mm512_loadu_ps(reinterpret_cast<const float*>(ap + 64));
        const __m512i init = kOff < 0 ? _mm512_setzero_si512() : _mm512_loadu_si512(ap + 128);
        for (int r = 0; r < R; ++r) {
          const __m512i s = _mm512_dpbusd_epi32(init, wq[r], aq);
          if constexpr (kOff < 0) {
            acc[r][t] = _mm512_fmadd_ps(mw[r], _mm512_loadu_ps(reinterpret_cast<const float*>(ap + 128)), acc[r][t]);
          }
          acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[r], dv), acc[r][t]);
        }
      }
    };
    const int64_t nb = n_in / 32;
    int64_t b = 0, p = 0;
    for (; (nb - b) * kBB >= 64; b += 2, ++p) step.template operator()<true>(b, p, true);
    for (; b < nb; b += 2, ++p) step.template operator()<false>(b, p, b + 1 < nb);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

template <DType kType, int kOff>
void ComputeVnni(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                 int64_t n_in, float* y, int64_t ldy) {
  TileLoop<VnniKernel<kType, kOff>, 4, 3>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- bf16 GEMM

int64_t Bf16Bytes(int64_t n_in) { return RoundUp(n_in, 32) * 2; }

// 32 floats (masked tail zero) -> 32 bf16.
inline void StoreBf16x32(const float* x, int64_t n, uint16_t* out) {
  __m512 lo, hi;
  if (n >= 32) {
    lo = _mm512_loadu_ps(x);
    hi = _mm512_loadu_ps(x + 16);
  } else {
    lo = _mm512_maskz_loadu_ps(TailMask16(std::min<int64_t>(n, 16)), x);
    hi = n > 16 ? _mm512_maskz_loadu_ps(TailMask16(n - 16), x + 16) : _mm512_setzero_ps();
  }
  _mm512_storeu_si512(out, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

void ConvertBf16(const float* x, int64_t n_in, void* dst) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  for (int64_t k = 0; k < n_in; k += 32) StoreBf16x32(x + k, n_in - k, out + k);
}

void PackBf16(DType type, const uint8_t* w, int64_t ws, int64_t n_rows, int64_t n_in, void* dst) {
  const int64_t ps = Bf16Bytes(n_in) / 2;
  uint16_t* out = static_cast<uint16_t*>(dst);
  alignas(64) float buf[256];
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* row = w + r * ws;
    uint16_t* o = out + r * ps;
    if (type == DType::kBF16) {
      std::memcpy(o, row, n_in * 2);
      std::memset(o + n_in, 0, (ps - n_in) * 2);
      continue;
    }
    for (int64_t k0 = 0; k0 < n_in; k0 += 256) {
      const int64_t n = std::min<int64_t>(256, n_in - k0);
      DequantF32Avx512(type, row, k0, n, buf);
      for (int64_t i = 0; i < n; i += 32) StoreBf16x32(buf + i, n - i, o + k0 + i);
    }
  }
}

// vdpbf16ps register tile (R rows x T tokens) over 32-element chunks; Src
// gives a row's chunk as bf16 (PanelBf16: the GEMM's packed panel; RowBf16:
// the weight row rounded in registers, below).
template <class Src>
struct Bf16Kernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const int64_t kp = RoundUp(n_in, 32);
    for (int64_t k = 0; k < kp; k += 32) {
      __m512bh wv[R];
      for (int r = 0; r < R; ++r) wv[r] = Src::Load(w + r * ws, k, n_in);
      for (int t = 0; t < T; ++t) {
        const __m512bh a = (__m512bh)_mm512_load_si512(act + t * as + k * 2);
        for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], a);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

struct PanelBf16 {
  static __m512bh Load(const uint8_t* row, int64_t k, int64_t) { return (__m512bh)_mm512_load_si512(row + k * 2); }
};

void ComputeBf16(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                 int64_t n_in, float* y, int64_t ldy) {
  TileLoop<Bf16Kernel<PanelBf16>, 4, 6>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
}

// F16 / BF16 rows read as they are (small batches): each 32-element chunk of
// a row is rounded to bf16 in registers exactly as PackBf16 rounds it into
// the GEMM's panel (F16 -> f32 exact, then round-to-nearest-even; the tail
// zero), then the same Bf16Kernel chain and reduction as the GEMM: a row's
// result is bitwise the GEMM's, whatever the batch size (batch invariance).
template <DType kType>
inline __m512bh RowBf16x32(const uint8_t* row, int64_t k, int64_t n_in) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(row) + k;
  const int64_t n = n_in - k;
  if constexpr (kType == DType::kBF16) {
    if (n >= 32) return (__m512bh)_mm512_loadu_si512(h);
    return (__m512bh)_mm512_maskz_loadu_epi16(static_cast<__mmask32>((1ull << n) - 1), h);
  } else {
    __m256i lo, hi;
    if (n >= 32) {
      lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h));
      hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + 16));
    } else {
      lo = _mm256_maskz_loadu_epi16(TailMask16(std::min<int64_t>(n, 16)), h);
      hi = n > 16 ? _mm256_maskz_loadu_epi16(TailMask16(n - 16), h + 16) : _mm256_setzero_si256();
    }
    return _mm512_cvtne2ps_pbh(_mm512_cvtph_ps(hi), _mm512_cvtph_ps(lo));
  }
}

template <DType kType>
struct RowBf16 {
  static __m512bh Load(const uint8_t* row, int64_t k, int64_t n_in) {
    _mm_prefetch(reinterpret_cast<const char*>(row) + 2 * k + 512, _MM_HINT_T0);
    return RowBf16x32<kType>(row, k, n_in);
  }
};

template <DType kType>
void ComputeBf16Rows(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                     int64_t n_in, float* y, int64_t ldy) {
  TileLoop<Bf16Kernel<RowBf16<kType>>, 4, 4>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- plans

constexpr int64_t kDecodeChunk = 16;
constexpr int64_t kPanelChunk = 32;

const Plan kWideF32 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kF32>, kDecodeChunk,
                        "avx512/wide-gemv"};
const Plan kWideF16 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kF16>, kDecodeChunk,
                        "avx512/wide-gemv"};
const Plan kWideBF16 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kBF16>, kDecodeChunk,
                         "avx512/wide-gemv"};
const Plan kVnniQ4_0 = {Q8Bytes, ConvertQ8<8>, nullptr, nullptr, ComputeVnni<DType::kQ4_0, 8>, kDecodeChunk,
                        "avx512/vnni-gemv"};
const Plan kVnniQ5_0 = {Q8Bytes, ConvertQ8<16>, nullptr, nullptr, ComputeVnni<DType::kQ5_0, 16>, kDecodeChunk,
                        "avx512/vnni-gemv"};
const Plan kVnniQ8_0 = {Q8Bytes, ConvertQ8<128>, nullptr, nullptr, ComputeVnni<DType::kQ8_0, 128>, kDecodeChunk,
                        "avx512/vnni-gemv"};
const Plan kVnniQ4_1 = {Q8Bytes, ConvertQ8<-1>, nullptr, nullptr, ComputeVnni<DType::kQ4_1, -1>, kDecodeChunk,
                        "avx512/vnni-gemv"};
const Plan kBf16RowsF16 = {Bf16Bytes, ConvertBf16, nullptr, nullptr, ComputeBf16Rows<DType::kF16>, kDecodeChunk,
                           "avx512/bf16-gemv"};
const Plan kBf16RowsBF16 = {Bf16Bytes, ConvertBf16, nullptr, nullptr, ComputeBf16Rows<DType::kBF16>, kDecodeChunk,
                            "avx512/bf16-gemv"};
const Plan kGemmBf16 = {Bf16Bytes, ConvertBf16, Bf16Bytes, PackBf16, ComputeBf16, kPanelChunk,
                         "avx512/dequant-bf16-gemm"};

enum class QuantKernel { kGemv, kPanel, kGemm };

QuantKernel ChooseQuant(DType type, int64_t n_tokens, BatchPath path) {
  switch (path) {
    case BatchPath::kLegacy: return n_tokens >= kGemmMinTokens ? QuantKernel::kGemm : QuantKernel::kGemv;
    case BatchPath::kGemv: return QuantKernel::kGemv;
    case BatchPath::kPanel: return QuantKernel::kPanel;
    case BatchPath::kGemm: return QuantKernel::kGemm;
    case BatchPath::kAuto: break;
  }
  return n_tokens < PanelMinTokens(type) ? QuantKernel::kGemv : QuantKernel::kPanel;
}

}  // namespace

const Plan* Avx512Plan(DType type, int64_t n_tokens, BatchPath path) {
  const bool wide_gemm = n_tokens >= kGemmMinTokens;
  const QuantKernel qk = ChooseQuant(type, n_tokens, path);
  if (qk == QuantKernel::kPanel) {
    if (const Plan* p = Avx512Int8PanelPlan(type)) return p;
  }
  // Small batches (kAuto, kGemv): the fused kernels, whose integer block
  // sums and f32 fold are the panel's, so a token's row is bitwise the same
  // on either side of PanelMinTokens (batch invariance). The VNNI GEMV tiles
  // below fold in their own order; only kLegacy still picks them.
  if (qk == QuantKernel::kGemv && path != BatchPath::kLegacy) {
    if (const Plan* p = Avx512Int8FusedPlan(type)) return p;
  }
  const bool gemm = qk == QuantKernel::kGemm;
  switch (type) {
    case DType::kF32: return &kWideF32;
    // F16/BF16: bf16 products at every batch size (batch invariance); the
    // f32 wide GEMV (exact products) only for kLegacy A/B runs.
    case DType::kF16: return wide_gemm ? &kGemmBf16 : path == BatchPath::kLegacy ? &kWideF16 : &kBf16RowsF16;
    case DType::kBF16: return wide_gemm ? &kGemmBf16 : path == BatchPath::kLegacy ? &kWideBF16 : &kBf16RowsBF16;
    case DType::kQ4_0: return gemm ? &kGemmBf16 : &kVnniQ4_0;
    case DType::kQ5_0: return gemm ? &kGemmBf16 : &kVnniQ5_0;
    case DType::kQ8_0: return gemm ? &kGemmBf16 : &kVnniQ8_0;
    case DType::kQ4_1: return gemm ? &kGemmBf16 : &kVnniQ4_1;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return gemm ? &kGemmBf16 : Avx512KQuantDecodePlan(type);
    default: return nullptr;
  }
}

}  // namespace pagoda::kernels::internal
