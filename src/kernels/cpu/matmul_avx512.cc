// AVX-512 MatMul plans (F, BW, DQ, VL, VNNI, BF16).
//
//  decode (n_tokens < kGemmMinTokens):
//   * Q4_0/Q5_0/Q8_0: activations -> Q8 (per 32-block max-abs, stored as
//     u8 = q + 128), int8 dot with vpdpbusd; the +128 offset is removed by
//     starting each block's accumulator at -128 * sum(w). Error: activation
//     rounding only, |dx| <= amax_blk / 254.
//   * Q4_1: as Q4_0 without the offset; the min term m * sum(x) uses the
//     per-block activation sums (stored as f32 d_x * sum(q_x)).
//   * F32/F16/BF16: weights widened to f32, f32 FMA (exact products).
//   * Q4_K/Q5_K/Q6_K: integer dots against per-256 Q8 activations, see
//     matmul_kquant_avx512.cc.
//  prefill (n_tokens >= kGemmMinTokens), every type but F32:
//   * a chunk of weight rows is dequantized once into a bf16 panel, the
//     activations are rounded to bf16 once per call, and a 4-row x 6-token
//     register tile runs vdpbf16ps (f32 accumulate). Error: bf16 rounding of
//     both operands, relative 2^-9 each.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/dequant_avx512.h"
#include "kernels/cpu/matmul_internal.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

constexpr int64_t kGemmMinTokens = 8;

inline int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }
inline __mmask16 TailMask16(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

// Runs Kernel::Run<R, T> over an [n_rows x n_tok] output: token tiles outer
// (activations reused across the rows of a chunk), row tiles inner.
template <class K, int R, int T, int t>
inline void RunTok(int nt, const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y,
                   int64_t ldy) {
  if constexpr (t >= 1) {
    if (nt == t) return K::template Run<R, t>(w, ws, act, as, n_in, y, ldy);
    RunTok<K, R, T, t - 1>(nt, w, ws, act, as, n_in, y, ldy);
  }
}

template <class K, int R, int T>
void TileLoop(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
              int64_t n_in, float* y, int64_t ldy) {
  for (int64_t t0 = 0; t0 < n_tok; t0 += T) {
    const int nt = static_cast<int>(std::min<int64_t>(T, n_tok - t0));
    const uint8_t* at = act + t0 * as;
    float* yt = y + t0 * ldy;
    int64_t r = 0;
    for (; r + R <= n_rows; r += R) RunTok<K, R, T, T>(nt, w + r * ws, ws, at, as, n_in, yt + r, ldy);
    for (; r < n_rows; ++r) RunTok<K, 1, T, T>(nt, w + r * ws, ws, at, as, n_in, yt + r, ldy);
  }
}

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
// Activations are quantized per 32-block (max-abs, d = amax / 127) and stored
// per pair of blocks as qs[64], then f32 dv[16] (the activation scale of the
// block owning each int32 lane of the weight vector), then, for Q4_0/Q5_0,
// i32 init[16] (the accumulator start for that pair, see below).
//
// Weight vectors hold a pair of blocks in "nibble order" (Q4_0/Q5_0:
// a[0:16), b[0:16), a[16:32), b[16:32)) or "linear order" (Q8_0). vpdpbusd
// multiplies unsigned by signed bytes:
//  * Q4_0/Q5_0: weights are the raw unsigned levels q (0..15 / 0..31), the
//    activations signed; sum q*a = sum (q - off)*a + off*sum(a), so each
//    block's lanes start at -off*sum(a) (in init) and the offset cancels.
//  * Q8_0: weights are signed, activations stored as u8 = a + 128; each
//    block's lanes start at -128*sum(w), computed once per weight pair.
//  * Q4_1 (kOff = -1): unsigned levels, no offset; the init slot holds f32
//    d_x * sum(q_x) per block (lanes 0 and 4), multiplied by the weight min.
// An odd last block is paired with a zero block (zero weights, scale 0).

template <int kOff>  // 0: u8 activations for Q8_0 weights; 8/16: signed + init; -1: Q4_1
constexpr int64_t Q8PairBytes() { return kOff == 0 ? 128 : 192; }

template <int kOff>
int64_t Q8Bytes(int64_t n_in) { return (n_in + 63) / 64 * Q8PairBytes<kOff>(); }

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
  constexpr bool kNibble = kOff != 0;
  uint8_t* out = static_cast<uint8_t*>(dst);
  const int64_t nb = n_in / 32;
  const __m128i bias = _mm_set1_epi8(static_cast<char>(kOff == 0 ? 0x80 : 0));
  for (int64_t b = 0; b < nb; b += 2) {
    __m128i a_lo, a_hi, b_lo = _mm_setzero_si128(), b_hi = b_lo;
    float da, db = 0.0f;
    int sa, sb = 0;
    QuantBlock32(x + 32 * b, &da, &a_lo, &a_hi, &sa);
    if (b + 1 < nb) QuantBlock32(x + 32 * (b + 1), &db, &b_lo, &b_hi, &sb);
    __m128i* q = reinterpret_cast<__m128i*>(out);
    _mm_storeu_si128(q + 0, _mm_xor_si128(a_lo, bias));
    _mm_storeu_si128(q + (kNibble ? 2 : 1), _mm_xor_si128(a_hi, bias));
    _mm_storeu_si128(q + (kNibble ? 1 : 2), _mm_xor_si128(b_lo, bias));
    _mm_storeu_si128(q + 3, _mm_xor_si128(b_hi, bias));
    const __mmask16 bmask = kNibble ? 0xF0F0 : 0xFF00;
    _mm512_storeu_ps(reinterpret_cast<float*>(out + 64),
                     _mm512_mask_blend_ps(bmask, _mm512_set1_ps(da), _mm512_set1_ps(db)));
    if constexpr (kOff < 0) {
      alignas(64) float sums[16] = {};
      sums[0] = da * static_cast<float>(sa);
      sums[4] = db * static_cast<float>(sb);
      std::memcpy(out + 128, sums, sizeof(sums));
    } else if constexpr (kNibble) {
      alignas(64) int32_t init[16] = {};
      init[0] = -kOff * sa;
      init[4] = -kOff * sb;
      std::memcpy(out + 128, init, sizeof(init));
    }
    out += Q8PairBytes<kOff>();
  }
}

// Per-lane weight scales of a pair from the two fp16 block scales.
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

// Loads a weight pair (see above) and its per-lane scales. `pair` is false for
// an odd last block.
template <DType kType>
inline void LoadPair(const uint8_t* a, bool pair, __m512i* wq, __m512* dw);

template <>
inline void LoadPair<DType::kQ4_0>(const uint8_t* a, bool pair, __m512i* wq, __m512* dw) {
  const auto* ba = reinterpret_cast<const BlockQ4_0*>(a);
  const BlockQ4_0* bb = ba + 1;
  *wq = NibblePair(ba->qs, pair ? bb->qs : nullptr);
  *dw = PairScales(ba->d, pair ? bb->d : 0, true);
}

template <>
inline void LoadPair<DType::kQ4_1>(const uint8_t* a, bool pair, __m512i* wq, __m512* dw) {
  const auto* ba = reinterpret_cast<const BlockQ4_1*>(a);
  const BlockQ4_1* bb = ba + 1;
  *wq = NibblePair(ba->qs, pair ? bb->qs : nullptr);
  *dw = PairScales(ba->d, pair ? bb->d : 0, true);
}

// Per-lane Q4_1 mins of a pair (same lane order as PairScales).
inline __m512 PairMinsQ4_1(const uint8_t* a, bool pair) {
  const auto* ba = reinterpret_cast<const BlockQ4_1*>(a);
  return PairScales(ba->m, pair ? ba[1].m : 0, true);
}

template <>
inline void LoadPair<DType::kQ5_0>(const uint8_t* a, bool pair, __m512i* wq, __m512* dw) {
  const auto* ba = reinterpret_cast<const BlockQ5_0*>(a);
  const BlockQ5_0* bb = ba + 1;
  uint32_t ha, hb = 0;
  std::memcpy(&ha, ba->qh, 4);
  if (pair) std::memcpy(&hb, bb->qh, 4);
  const __m512i u = NibblePair(ba->qs, pair ? bb->qs : nullptr);
  const uint64_t hm = (ha & 0xFFFFull) | (static_cast<uint64_t>(hb & 0xFFFF) << 16) |
                      (static_cast<uint64_t>(ha >> 16) << 32) | (static_cast<uint64_t>(hb >> 16) << 48);
  *wq = _mm512_mask_add_epi8(u, hm, u, _mm512_set1_epi8(16));
  *dw = PairScales(ba->d, pair ? bb->d : 0, true);
}

template <>
inline void LoadPair<DType::kQ8_0>(const uint8_t* a, bool pair, __m512i* wq, __m512* dw) {
  const auto* ba = reinterpret_cast<const BlockQ8_0*>(a);
  const BlockQ8_0* bb = ba + 1;
  const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ba->qs));
  const __m256i qb = pair ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bb->qs)) : _mm256_setzero_si256();
  *wq = _mm512_inserti64x4(_mm512_castsi256_si512(qa), qb, 1);
  *dw = PairScales(ba->d, pair ? bb->d : 0, false);
}

template <DType kType, int64_t kBlockBytes, int kOff>
struct VnniKernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    constexpr int64_t kPair = Q8PairBytes<kOff>();
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const int64_t nb = n_in / 32;
    const __m512i k128 = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int64_t b = 0, p = 0; b < nb; b += 2, ++p) {
      const bool pair = b + 1 < nb;
      __m512i wq[R], init[R];
      __m512 dw[R], mw[R];
      for (int r = 0; r < R; ++r) {
        LoadPair<kType>(w + r * ws + b * kBlockBytes, pair, &wq[r], &dw[r]);
        if constexpr (kOff < 0) mw[r] = PairMinsQ4_1(w + r * ws + b * kBlockBytes, pair);
        if constexpr (kOff == 0) {
          init[r] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, wq[r]));
        }
      }
      for (int t = 0; t < T; ++t) {
        const uint8_t* ap = act + t * as + p * kPair;
        const __m512i aq = _mm512_loadu_si512(ap);
        const __m512 dv = _mm512_loadu_ps(reinterpret_cast<const float*>(ap + 64));
        for (int r = 0; r < R; ++r) {
          __m512i s;
          if constexpr (kOff == 0) {
            s = _mm512_dpbusd_epi32(init[r], aq, wq[r]);
          } else if constexpr (kOff < 0) {
            s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wq[r], aq);
            acc[r][t] = _mm512_fmadd_ps(mw[r], _mm512_loadu_ps(reinterpret_cast<const float*>(ap + 128)), acc[r][t]);
          } else {
            s = _mm512_dpbusd_epi32(_mm512_loadu_si512(ap + 128), wq[r], aq);
          }
          acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[r], dv), acc[r][t]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

template <DType kType, int64_t kBlockBytes, int kOff>
void ComputeVnni(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                 int64_t n_in, float* y, int64_t ldy) {
  TileLoop<VnniKernel<kType, kBlockBytes, kOff>, 4, 3>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
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

struct Bf16Kernel {
  template <int R, int T>
  static void Run(const uint8_t* w, int64_t ws, const uint8_t* act, int64_t as, int64_t n_in, float* y, int64_t ldy) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    const int64_t kp = RoundUp(n_in, 32);
    for (int64_t k = 0; k < kp; k += 32) {
      __m512bh wv[R];
      for (int r = 0; r < R; ++r) wv[r] = (__m512bh)_mm512_load_si512(w + r * ws + k * 2);
      for (int t = 0; t < T; ++t) {
        const __m512bh a = (__m512bh)_mm512_load_si512(act + t * as + k * 2);
        for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], a);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
};

void ComputeBf16(const uint8_t* w, int64_t ws, int64_t n_rows, const uint8_t* act, int64_t as, int64_t n_tok,
                 int64_t n_in, float* y, int64_t ldy) {
  TileLoop<Bf16Kernel, 4, 6>(w, ws, n_rows, act, as, n_tok, n_in, y, ldy);
}

// ---------------------------------------------------------------- plans

constexpr int64_t kDecodeChunk = 16;
constexpr int64_t kPanelChunk = 32;

const Plan kWideF32 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kF32>, kDecodeChunk};
const Plan kWideF16 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kF16>, kDecodeChunk};
const Plan kWideBF16 = {F32Bytes, CopyF32, nullptr, nullptr, ComputeWide<DType::kBF16>, kDecodeChunk};
const Plan kVnniQ4_0 = {Q8Bytes<8>, ConvertQ8<8>, nullptr, nullptr,
                        ComputeVnni<DType::kQ4_0, sizeof(BlockQ4_0), 8>, kDecodeChunk};
const Plan kVnniQ5_0 = {Q8Bytes<16>, ConvertQ8<16>, nullptr, nullptr,
                        ComputeVnni<DType::kQ5_0, sizeof(BlockQ5_0), 16>, kDecodeChunk};
const Plan kVnniQ8_0 = {Q8Bytes<0>, ConvertQ8<0>, nullptr, nullptr,
                        ComputeVnni<DType::kQ8_0, sizeof(BlockQ8_0), 0>, kDecodeChunk};
const Plan kVnniQ4_1 = {Q8Bytes<-1>, ConvertQ8<-1>, nullptr, nullptr,
                        ComputeVnni<DType::kQ4_1, sizeof(BlockQ4_1), -1>, kDecodeChunk};
const Plan kGemmBf16 = {Bf16Bytes, ConvertBf16, Bf16Bytes, PackBf16, ComputeBf16, kPanelChunk};

}  // namespace

const Plan* Avx512Plan(DType type, int64_t n_tokens) {
  const bool gemm = n_tokens >= kGemmMinTokens;
  switch (type) {
    case DType::kF32: return &kWideF32;
    case DType::kF16: return gemm ? &kGemmBf16 : &kWideF16;
    case DType::kBF16: return gemm ? &kGemmBf16 : &kWideBF16;
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
