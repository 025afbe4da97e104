// Weight quantizers following ggml's quantize_row_*_ref step for step (same
// float expression order, same rounding helpers), so that a tensor quantized
// here matches what llama-quantize writes without an importance matrix.
#include "kernels/cpu/quantize_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/quantize.h"
#include "tensor/blocks.h"
#include "tensor/fp16.h"

namespace pagoda::kernels {
namespace {

// ggml's nearest_int: round half to even through the float mantissa, valid
// for |f| <= 2^22 - 1 (every caller is bounded by a few hundred).
inline int NearestInt(float f) {
  const float v = f + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

// ---- legacy 32-element blocks ----

// Index of the element of largest magnitude; ggml keeps the first on ties.
float SignedMax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void BlockQ4_0Ref(const float* x, BlockQ4_0* y) {
  const float d = SignedMax(x, 32) / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  for (int j = 0; j < 16; ++j) {
    // (int8_t) truncation as in ggml: x*id + 8.5 lies in [0.5, 16.5].
    const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
    const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
    y->qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void BlockQ4_1Ref(const float* x, BlockQ4_1* y) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; ++j) {
    mn = std::min(mn, x[j]);
    mx = std::max(mx, x[j]);
  }
  const float d = (mx - mn) / 15.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  y->m = F32ToF16(mn);
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>((x[j] - mn) * id + 0.5f)));
    const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>((x[j + 16] - mn) * id + 0.5f)));
    y->qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void BlockQ5_0Ref(const float* x, BlockQ5_0* y) {
  const float d = SignedMax(x, 32) / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f)));
    const int q1 = std::min(31, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 16.5f)));
    y->qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
    qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(y->qh, &qh, sizeof qh);
}

void BlockQ8_0Ref(const float* x, BlockQ8_0* y) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = F32ToF16(d);
  for (int j = 0; j < 32; ++j) y->qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
}

// ---- K-quants ----

// make_qkx2_quants: levels L in [0, nmax] and a (scale, min) pair for one
// sub-block, searching nstep + 1 candidate scales around nmax / (max - min)
// for the least weighted squared error (min fitted by least squares, kept
// <= 0). Returns the scale; *neg_min receives -min.
float MakeQkx2(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
               uint8_t* Laux, float rmin, float rdelta, int nstep) {
  float mn = x[0], mx = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (mn > 0) mn = 0;
  if (mx == mn) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -mn;
    return 0.0f;
  }
  float iscale = nmax / (mx - mn);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = NearestInt(iscale * (x[i] - mn));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    const float diff = scale * L[i] + mn - x[i];
    best_error += w[i] * (diff * diff);
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (mx - mn);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = NearestInt(iscale * (x[i] - mn));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * Laux[i] + this_min - x[i];
        cur_error += w[i] * (diff * diff);
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, n);
        best_error = cur_error;
        scale = this_scale;
        mn = this_min;
      }
    }
  }
  *neg_min = -mn;
  return scale;
}

void UnpackScaleMin(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

// The shared part of Q4_K and Q5_K: per 32-sub-block scale/min search,
// 6-bit packing against the super-block d / dmin, then the final levels in L.
void KQuantScalesMins(const float* x, int nmax, float rmin, int nstep, Half* d_out, Half* dmin_out,
                      uint8_t* packed, uint8_t* L) {
  uint8_t Laux[32];
  float weights[32], mins[8], scales[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = MakeQkx2(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(packed, 0, kKScaleSize);
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int in a uint8_t before clamping to 63.
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_min * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = F32ToF16(max_scale / 63.0f);
  *dmin_out = F32ToF16(max_min / 63.0f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    UnpackScaleMin(j, packed, &sc, &m);
    const float d = F16ToF32(*d_out) * sc;
    if (d == 0.0f) continue;  // levels from the search stay
    const float dm = F16ToF32(*dmin_out) * m;
    for (int i = 0; i < 32; ++i) {
      const int l = NearestInt((x[32 * j + i] + dm) / d);
      L[32 * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

void BlockQ4_KRef(const float* x, BlockQ4_K* y) {
  uint8_t L[kQK_K];
  KQuantScalesMins(x, 15, -1.0f, 20, &y->d, &y->dmin, y->scales, L);
  uint8_t* q = y->qs;
  for (int j = 0; j < kQK_K; j += 64, q += 32) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void BlockQ5_KRef(const float* x, BlockQ5_K* y) {
  uint8_t L[kQK_K];
  KQuantScalesMins(x, 31, -0.5f, 15, &y->d, &y->dmin, y->scales, L);
  std::memset(y->qh, 0, sizeof y->qh);
  uint8_t* ql = y->qs;
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < kQK_K; n += 64, ql += 32) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) { l1 -= 16; y->qh[j] |= m1; }
      if (l2 > 15) { l2 -= 16; y->qh[j] |= m2; }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
  }
}

constexpr float kGroupMaxEps = 1e-15f;

// make_qx_quants with rmse_type 1 (weights x^2) and no importance matrix:
// symmetric levels in [-nmax, nmax - 1], scale refined over 19 candidates.
float MakeQx(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = NearestInt(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = NearestInt(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = NearestInt(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

void BlockQ6_KRef(const float* x, BlockQ6_K* y) {
  int8_t L[kQK_K];
  float scales[kQK_K / 16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < kQK_K / 16; ++ib) {
    scales[ib] = MakeQx(16, 32, x + 16 * ib, L + 16 * ib);
    const float abs_scale = std::fabs(scales[ib]);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scales[ib];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(y, 0, sizeof *y);
    return;
  }
  const float iscale = -128.0f / max_scale;
  y->d = F32ToF16(1 / iscale);
  for (int ib = 0; ib < kQK_K / 16; ++ib) {
    y->scales[ib] = static_cast<int8_t>(std::min(127, NearestInt(iscale * scales[ib])));
  }
  for (int j = 0; j < kQK_K / 16; ++j) {
    const float d = F16ToF32(y->d) * y->scales[j];
    if (d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      const int l = NearestInt(x[16 * j + i] / d);
      L[16 * j + i] = static_cast<int8_t>(std::max(-32, std::min(31, l)) + 32);
    }
  }
  uint8_t* ql = y->ql;
  uint8_t* qh = y->qh;
  for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

template <class Block, void (*F)(const float*, Block*)>
void Blocks(const float* src, void* dst, int64_t n, int bs) {
  Block* b = static_cast<Block*>(dst);
  for (int64_t i = 0; i < n / bs; ++i) F(src + i * bs, b + i);
}

}  // namespace

bool CanQuantizeWeights(DType type) {
  switch (type) {
    case DType::kF32: case DType::kF16: case DType::kBF16:
    case DType::kQ8_0: case DType::kQ4_0: case DType::kQ4_1: case DType::kQ5_0:
    case DType::kQ4_K: case DType::kQ5_K: case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

Status QuantizeWeightRow(DType type, const float* src, void* dst, int64_t n) {
  if (!CanQuantizeWeights(type)) {
    return Unimplemented(std::string("weight quantization to ") + DTypeName(type));
  }
  const DTypeInfo& info = GetDTypeInfo(type);
  if (n < 0 || n % info.block_size != 0) {
    return InvalidArgument("row length " + std::to_string(n) + " is not a multiple of the " +
                           info.name + " block size " + std::to_string(info.block_size));
  }
  switch (type) {
    case DType::kQ8_0: Blocks<BlockQ8_0, BlockQ8_0Ref>(src, dst, n, kQK8_0); break;
    case DType::kQ4_0: Blocks<BlockQ4_0, BlockQ4_0Ref>(src, dst, n, kQK4_0); break;
    case DType::kQ4_1: Blocks<BlockQ4_1, BlockQ4_1Ref>(src, dst, n, kQK4_1); break;
    case DType::kQ5_0: Blocks<BlockQ5_0, BlockQ5_0Ref>(src, dst, n, kQK5_0); break;
    case DType::kQ4_K: Blocks<BlockQ4_K, BlockQ4_KRef>(src, dst, n, kQK_K); break;
    case DType::kQ5_K: Blocks<BlockQ5_K, BlockQ5_KRef>(src, dst, n, kQK_K); break;
    case DType::kQ6_K: Blocks<BlockQ6_K, BlockQ6_KRef>(src, dst, n, kQK_K); break;
    default: return QuantizeRow(type, src, dst, n);  // element-wise F32 / F16 / BF16
  }
  return Status::Ok();
}

Status QuantizeWeightRows(DType type, const float* src, void* dst, int64_t n_rows, int64_t n,
                          ThreadPool& pool) {
  // Validates type and length once; rows then cannot fail.
  if (n_rows <= 0) return Status::Ok();
  const int64_t row_bytes = RowBytes(type, std::max<int64_t>(n, 0));
  PAGODA_RETURN_IF_ERROR(QuantizeWeightRow(type, src, dst, n));
  auto* out = static_cast<uint8_t*>(dst);
  pool.Run([&](int ith, int nth) {
    for (int64_t r = 1 + ith; r < n_rows; r += nth) {
      PAGODA_CHECK(QuantizeWeightRow(type, src + r * n, out + r * row_bytes, n).ok());
    }
  });
  return Status::Ok();
}

Status RequantizeTensor(const TensorView& src, DType type, void* dst, ThreadPool& pool) {
  const int64_t n = src.ne[0];
  const int64_t n_rows = src.rows();
  std::vector<float> probe(static_cast<size_t>(n));
  // Row 0 proves both directions work for these types and this length.
  PAGODA_RETURN_IF_ERROR(DequantizeRow(src.type, src.row(0), probe.data(), n));
  PAGODA_RETURN_IF_ERROR(QuantizeWeightRow(type, probe.data(), dst, n));
  const int64_t row_bytes = RowBytes(type, n);
  auto* out = static_cast<uint8_t*>(dst);
  pool.Run([&](int ith, int nth) {
    std::vector<float> row(static_cast<size_t>(n));
    // Contiguous row ranges: each thread streams its own part of the source.
    const int64_t r0 = 1 + (n_rows - 1) * ith / nth;
    const int64_t r1 = 1 + (n_rows - 1) * (ith + 1) / nth;
    for (int64_t r = r0; r < r1; ++r) {
      PAGODA_CHECK(DequantizeRow(src.type, src.row(r), row.data(), n).ok());
      PAGODA_CHECK(QuantizeWeightRow(type, row.data(), out + r * row_bytes, n).ok());
    }
  });
  return Status::Ok();
}

}  // namespace pagoda::kernels
