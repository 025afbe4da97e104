// Scalar reference quantize / dequantize. Dequantizers follow GGML's
// dequantize_row_* operation for operation (same float expression order), so a
// GGUF written by llama.cpp decodes to bit-identical floats. Weight blocks are
// quantized by quantize_weights.cc (ggml's reference rounding); this file
// keeps the element-wise types and Q8_K (activations of K-quant dot products).
#include "kernels/cpu/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kernels/cpu/quantize_weights.h"
#include "tensor/blocks.h"
#include "tensor/fp16.h"

namespace pagoda::kernels {
namespace {

inline int NearestInt(float f) { return static_cast<int>(std::lrintf(f)); }

void GetScaleMinK4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

// ---- Q8_K: activations only (K-quant dot products); weights: quantize_weights.cc ----

void QuantizeQ8_K(const float* x, BlockQ8_K* b) {
  float amax = 0.0f;
  for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  b->d = d;
  for (int j = 0; j < kQK_K; ++j) b->qs[j] = static_cast<int8_t>(std::clamp(NearestInt(x[j] * id), -127, 127));
  for (int g = 0; g < kQK_K / 16; ++g) {
    int s = 0;
    for (int l = 0; l < 16; ++l) s += b->qs[g * 16 + l];
    b->bsums[g] = static_cast<int16_t>(s);
  }
}

// ---- dequantizers (one block), GGML expression order ----

void DequantizeQ4_0(const BlockQ4_0* b, float* y) {
  const float d = F16ToF32(b->d);
  for (int j = 0; j < 16; ++j) {
    const int x0 = (b->qs[j] & 0x0F) - 8;
    const int x1 = (b->qs[j] >> 4) - 8;
    y[j] = x0 * d;
    y[j + 16] = x1 * d;
  }
}

void DequantizeQ4_1(const BlockQ4_1* b, float* y) {
  const float d = F16ToF32(b->d);
  const float m = F16ToF32(b->m);
  for (int j = 0; j < 16; ++j) {
    const int x0 = b->qs[j] & 0x0F;
    const int x1 = b->qs[j] >> 4;
    y[j] = x0 * d + m;
    y[j + 16] = x1 * d + m;
  }
}

void DequantizeQ5_0(const BlockQ5_0* b, float* y) {
  const float d = F16ToF32(b->d);
  uint32_t qh;
  std::memcpy(&qh, b->qh, 4);
  for (int j = 0; j < 16; ++j) {
    const uint8_t xh0 = static_cast<uint8_t>(((qh >> (j + 0)) << 4) & 0x10);
    const uint8_t xh1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
    const int32_t x0 = ((b->qs[j] & 0x0F) | xh0) - 16;
    const int32_t x1 = ((b->qs[j] >> 4) | xh1) - 16;
    y[j] = x0 * d;
    y[j + 16] = x1 * d;
  }
}

void DequantizeQ8_0(const BlockQ8_0* b, float* y) {
  const float d = F16ToF32(b->d);
  for (int j = 0; j < 32; ++j) y[j] = b->qs[j] * d;
}

void DequantizeQ8_K(const BlockQ8_K* b, float* y) {
  for (int j = 0; j < kQK_K; ++j) y[j] = b->d * b->qs[j];
}

void DequantizeQ4_K(const BlockQ4_K* b, float* y) {
  const uint8_t* q = b->qs;
  const float d = F16ToF32(b->d);
  const float min = F16ToF32(b->dmin);
  int is = 0;
  uint8_t sc, m;
  for (int j = 0; j < kQK_K; j += 64) {
    GetScaleMinK4(is + 0, b->scales, &sc, &m);
    const float d1 = d * sc;
    const float m1 = min * m;
    GetScaleMinK4(is + 1, b->scales, &sc, &m);
    const float d2 = d * sc;
    const float m2 = min * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}

void DequantizeQ5_K(const BlockQ5_K* b, float* y) {
  const uint8_t* ql = b->qs;
  const uint8_t* qh = b->qh;
  const float d = F16ToF32(b->d);
  const float min = F16ToF32(b->dmin);
  int is = 0;
  uint8_t sc, m;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < kQK_K; j += 64) {
    GetScaleMinK4(is + 0, b->scales, &sc, &m);
    const float d1 = d * sc;
    const float m1 = min * m;
    GetScaleMinK4(is + 1, b->scales, &sc, &m);
    const float d2 = d * sc;
    const float m2 = min * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 <<= 2;
    u2 <<= 2;
  }
}

void DequantizeQ6_K(const BlockQ6_K* b, float* y) {
  const float d = F16ToF32(b->d);
  const uint8_t* ql = b->ql;
  const uint8_t* qh = b->qh;
  const int8_t* sc = b->scales;
  for (int n = 0; n < kQK_K; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int8_t q1 = static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int8_t q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int8_t q3 = static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int8_t q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l + 0] = d * sc[is + 0] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

template <class Block, void (*F)(const float*, Block*)>
void QuantizeBlocks(const float* src, void* dst, int64_t nb, int bs) {
  Block* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < nb; ++i) F(src + i * bs, b + i);
}

template <class Block, void (*F)(const Block*, float*)>
void DequantizeBlocks(const void* src, float* dst, int64_t nb, int bs) {
  const Block* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < nb; ++i) F(b + i, dst + i * bs);
}

Status CheckRow(DType type, int64_t n) {
  const auto info = LookupDType(static_cast<uint32_t>(type));
  if (!info) return InvalidArgument("unknown dtype");
  if (n < 0 || n % info->block_size != 0) {
    return InvalidArgument(std::string("row length ") + std::to_string(n) + " is not a multiple of the " +
                           info->name + " block size " + std::to_string(info->block_size));
  }
  return Status::Ok();
}

}  // namespace

Status QuantizeRow(DType type, const float* src, void* dst, int64_t n) {
  PAGODA_RETURN_IF_ERROR(CheckRow(type, n));
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return Status::Ok();
    case DType::kF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = F32ToF16(src[i]);
      return Status::Ok();
    }
    case DType::kBF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = F32ToBF16(src[i]);
      return Status::Ok();
    }
    case DType::kQ8_K: QuantizeBlocks<BlockQ8_K, QuantizeQ8_K>(src, dst, n / kQK_K, kQK_K); return Status::Ok();
    default:
      // Weight blocks: ggml's reference rounding, one implementation.
      if (CanQuantizeWeights(type)) return QuantizeWeightRow(type, src, dst, n);
      return Unimplemented(std::string("quantize to ") + DTypeName(type));
  }
}

Status DequantizeRow(DType type, const void* src, float* dst, int64_t n) {
  PAGODA_RETURN_IF_ERROR(CheckRow(type, n));
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return Status::Ok();
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = F16ToF32(s[i]);
      return Status::Ok();
    }
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = BF16ToF32(s[i]);
      return Status::Ok();
    }
    case DType::kQ4_0: DequantizeBlocks<BlockQ4_0, DequantizeQ4_0>(src, dst, n / 32, 32); return Status::Ok();
    case DType::kQ4_1: DequantizeBlocks<BlockQ4_1, DequantizeQ4_1>(src, dst, n / 32, 32); return Status::Ok();
    case DType::kQ5_0: DequantizeBlocks<BlockQ5_0, DequantizeQ5_0>(src, dst, n / 32, 32); return Status::Ok();
    case DType::kQ8_0: DequantizeBlocks<BlockQ8_0, DequantizeQ8_0>(src, dst, n / 32, 32); return Status::Ok();
    case DType::kQ4_K: DequantizeBlocks<BlockQ4_K, DequantizeQ4_K>(src, dst, n / kQK_K, kQK_K); return Status::Ok();
    case DType::kQ5_K: DequantizeBlocks<BlockQ5_K, DequantizeQ5_K>(src, dst, n / kQK_K, kQK_K); return Status::Ok();
    case DType::kQ6_K: DequantizeBlocks<BlockQ6_K, DequantizeQ6_K>(src, dst, n / kQK_K, kQK_K); return Status::Ok();
    case DType::kQ8_K: DequantizeBlocks<BlockQ8_K, DequantizeQ8_K>(src, dst, n / kQK_K, kQK_K); return Status::Ok();
    default:
      return Unimplemented(std::string("dequantize from ") + DTypeName(type));
  }
}

}  // namespace pagoda::kernels
