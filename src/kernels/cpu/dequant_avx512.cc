// AVX-512 dequantization of whole blocks to f32 (same values as the scalar
// reference: every product below is exact in f32, or follows GGML's order).
// Used by the MatMul paths that expand weights before the dot product.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu/dequant_avx512.h"
#include "tensor/blocks.h"

namespace pagoda::kernels::internal {
namespace {

inline float H2F(Half h) { return _cvtsh_ss(h); }

// 16 bytes of packed nibbles -> [32 x u8] as (low nibbles, high nibbles).
inline __m256i Nibbles32(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}

// 32 x u8 in a ymm -> out[0..31] = scale * q + bias (FMA: exact when scale*q fits in 24 bits).
inline void StoreAffine32(__m256i q, __m512 scale, __m512 bias, float* out) {
  const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(q)));
  const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(q, 1)));
  _mm512_storeu_ps(out, _mm512_fmadd_ps(lo, scale, bias));
  _mm512_storeu_ps(out + 16, _mm512_fmadd_ps(hi, scale, bias));
}

void BlockQ4_0F32(const BlockQ4_0* b, float* out) {
  const float d = H2F(b->d);
  StoreAffine32(Nibbles32(b->qs), _mm512_set1_ps(d), _mm512_set1_ps(-8.0f * d), out);
}

void BlockQ4_1F32(const BlockQ4_1* b, float* out) {
  StoreAffine32(Nibbles32(b->qs), _mm512_set1_ps(H2F(b->d)), _mm512_set1_ps(H2F(b->m)), out);
}

void BlockQ5_0F32(const BlockQ5_0* b, float* out) {
  uint32_t qh;
  std::memcpy(&qh, b->qh, 4);
  __m256i q = Nibbles32(b->qs);
  q = _mm256_mask_add_epi8(q, static_cast<__mmask32>(qh), q, _mm256_set1_epi8(16));
  const float d = H2F(b->d);
  StoreAffine32(q, _mm512_set1_ps(d), _mm512_set1_ps(-16.0f * d), out);
}

void BlockQ8_0F32(const BlockQ8_0* b, float* out) {
  const __m512 d = _mm512_set1_ps(H2F(b->d));
  const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
  const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16));
  _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q0)), d));
  _mm512_storeu_ps(out + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q1)), d));
}

void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

// Q4_K / Q5_K: y = (d*sc) * q - (dmin*m), matching GGML's d1 * q - m1.
inline void StoreK32(__m256i q, float d1, float m1, float* out) {
  const __m512 s = _mm512_set1_ps(d1), mm = _mm512_set1_ps(m1);
  const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(q)));
  const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(q, 1)));
  _mm512_storeu_ps(out, _mm512_sub_ps(_mm512_mul_ps(s, lo), mm));
  _mm512_storeu_ps(out + 16, _mm512_sub_ps(_mm512_mul_ps(s, hi), mm));
}

void BlockQ4_KF32(const BlockQ4_K* b, float* out) {
  const float d = H2F(b->d), dmin = H2F(b->dmin);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * c));
    int sc, m;
    ScaleMinK4(2 * c, b->scales, &sc, &m);
    StoreK32(_mm256_and_si256(v, m4), d * sc, dmin * m, out + 64 * c);
    ScaleMinK4(2 * c + 1, b->scales, &sc, &m);
    StoreK32(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), d * sc, dmin * m, out + 64 * c + 32);
  }
}

void BlockQ5_KF32(const BlockQ5_K* b, float* out) {
  const float d = H2F(b->d), dmin = H2F(b->dmin);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh));
  const __m256i sixteen = _mm256_set1_epi8(16);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * c));
    int sc, m;
    const __mmask32 k0 = _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(1 << (2 * c))));
    const __mmask32 k1 = _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(1 << (2 * c + 1))));
    __m256i lo = _mm256_and_si256(v, m4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    lo = _mm256_mask_add_epi8(lo, k0, lo, sixteen);
    hi = _mm256_mask_add_epi8(hi, k1, hi, sixteen);
    ScaleMinK4(2 * c, b->scales, &sc, &m);
    StoreK32(lo, d * sc, dmin * m, out + 64 * c);
    ScaleMinK4(2 * c + 1, b->scales, &sc, &m);
    StoreK32(hi, d * sc, dmin * m, out + 64 * c + 32);
  }
}

// 32 x i8 (q - 32 already applied) -> out = (d*sc_lo) * q for [0,16), (d*sc_hi) * q for [16,32).
inline void StoreQ6(__m256i q, float s_lo, float s_hi, float* out) {
  const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)));
  const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
  _mm512_storeu_ps(out, _mm512_mul_ps(_mm512_set1_ps(s_lo), lo));
  _mm512_storeu_ps(out + 16, _mm512_mul_ps(_mm512_set1_ps(s_hi), hi));
}

void BlockQ6_KF32(const BlockQ6_K* b, float* out) {
  const float d = H2F(b->d);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3), off = _mm256_set1_epi8(32);
  for (int n = 0; n < 2; ++n) {
    const uint8_t* ql = b->ql + 64 * n;
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * n));
    const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
    const __m256i q2 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
    const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
    const __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                       _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
    const int8_t* sc = b->scales + 8 * n;
    float* o = out + 128 * n;
    // GGML computes d * sc * q as (d * sc) * q.
    StoreQ6(_mm256_sub_epi8(q1, off), d * sc[0], d * sc[1], o);
    StoreQ6(_mm256_sub_epi8(q2, off), d * sc[2], d * sc[3], o + 32);
    StoreQ6(_mm256_sub_epi8(q3, off), d * sc[4], d * sc[5], o + 64);
    StoreQ6(_mm256_sub_epi8(q4, off), d * sc[6], d * sc[7], o + 96);
  }
}

template <class Block, void (*F)(const Block*, float*)>
void Blocks(const uint8_t* row, int64_t k0, int64_t n, int bs, float* out) {
  const Block* b = reinterpret_cast<const Block*>(row) + k0 / bs;
  for (int64_t i = 0; i < n / bs; ++i) F(b + i, out + i * bs);
}

}  // namespace

void DequantF32Avx512(DType type, const uint8_t* row, int64_t k0, int64_t n, float* out) {
  switch (type) {
    case DType::kF32:
      std::memcpy(out, reinterpret_cast<const float*>(row) + k0, n * sizeof(float));
      return;
    case DType::kF16: {
      const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + k0;
      int64_t i = 0;
      for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i))));
      }
      if (i < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + i)));
      }
      return;
    }
    case DType::kBF16: {
      const uint16_t* p = reinterpret_cast<const uint16_t*>(row) + k0;
      int64_t i = 0;
      for (; i + 16 <= n; i += 16) {
        const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
        _mm512_storeu_ps(out + i, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
      }
      if (i < n) {
        const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
        const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p + i));
        _mm512_mask_storeu_ps(out + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)));
      }
      return;
    }
    case DType::kQ4_0: Blocks<BlockQ4_0, BlockQ4_0F32>(row, k0, n, kQK4_0, out); return;
    case DType::kQ4_1: Blocks<BlockQ4_1, BlockQ4_1F32>(row, k0, n, kQK4_1, out); return;
    case DType::kQ5_0: Blocks<BlockQ5_0, BlockQ5_0F32>(row, k0, n, kQK5_0, out); return;
    case DType::kQ8_0: Blocks<BlockQ8_0, BlockQ8_0F32>(row, k0, n, kQK8_0, out); return;
    case DType::kQ4_K: Blocks<BlockQ4_K, BlockQ4_KF32>(row, k0, n, kQK_K, out); return;
    case DType::kQ5_K: Blocks<BlockQ5_K, BlockQ5_KF32>(row, k0, n, kQK_K, out); return;
    case DType::kQ6_K: Blocks<BlockQ6_K, BlockQ6_KF32>(row, k0, n, kQK_K, out); return;
    default:
      __builtin_trap();
  }
}

}  // namespace pagoda::kernels::internal
