// Quantized block layouts, bit-compatible with GGML (ggml-common.h). A block
// holds `block_size` consecutive elements of one row.
#pragma once

#include <cstdint>

namespace pagoda {

using Half = uint16_t;  // IEEE fp16 bits

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK_K = 256;
inline constexpr int kKScaleSize = 12;

// x = d * (q - 8); qs[j] low nibble = element j, high nibble = element j+16.
struct BlockQ4_0 {
  Half d;
  uint8_t qs[kQK4_0 / 2];
};
// x = d * q + m; same nibble order as Q4_0.
struct BlockQ4_1 {
  Half d;
  Half m;
  uint8_t qs[kQK4_1 / 2];
};
// x = d * (q - 16); q = nibble | (bit j of qh) << 4 (element j in bit j, j+16 in bit j+16).
struct BlockQ5_0 {
  Half d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
// x = d * q.
struct BlockQ8_0 {
  Half d;
  int8_t qs[kQK8_0];
};
// 8 sub-blocks of 32: x = d*sc_j*q - dmin*m_j, 6-bit sc/m packed in scales[12].
// qs in 64-element chunks: low nibbles are the first 32, high nibbles the next 32.
struct BlockQ4_K {
  Half d;
  Half dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQK_K / 2];
};
// As Q4_K plus a 5th bit per element in qh.
struct BlockQ5_K {
  Half d;
  Half dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
// 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q = 4 low bits (ql) | 2 high bits (qh) << 4.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  Half d;
};
// Activation-side block for K-quant dot products.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace pagoda
