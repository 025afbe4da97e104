// Dequantizing matrix-vector / small-batch kernels on GGUF blocks as stored:
// a warp per output row, lanes over the row's units (a block or part of one),
// NT tokens per pass so a batch reads each weight row once per NT tokens.
// f32 accumulation; the reference is kernels::MatMulReference (double).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_kernels.h"
#include "tensor/blocks.h"
#include "tensor/dtype.h"

namespace pagoda::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8;  // warps per thread block

__device__ __forceinline__ float Half(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float Bf16(uint16_t h) { return __uint_as_float(static_cast<uint32_t>(h) << 16); }
__device__ __forceinline__ uint16_t Load16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }

// acc[t] += sum_i w[i] * x[t * n_in + e0 + i] for the n_tok tokens of the tile;
// E % 4 == 0 and x 16-byte aligned at e0 (float4 loads).
template <int NT, int E>
__device__ __forceinline__ void DotTile(const float (&w)[E], const float* __restrict__ x, int64_t n_in, int64_t e0,
                                        int n_tok, float (&acc)[NT]) {
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    if (t >= n_tok) break;
    const float4* xv = reinterpret_cast<const float4*>(x + t * n_in + e0);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < E / 4; ++i) {
      const float4 v = __ldg(xv + i);
      s = fmaf(w[4 * i], v.x, s);
      s = fmaf(w[4 * i + 1], v.y, s);
      s = fmaf(w[4 * i + 2], v.z, s);
      s = fmaf(w[4 * i + 3], v.w, s);
    }
    acc[t] += s;
  }
}

// Each format: kUnitElems elements per unit, units per row, and Dot of one unit.
// Q4_0 / Q8_0: a unit is one 32-element block, an f16 scale then the quants,
// read as 16-bit words (the blocks are only 2-byte aligned).
template <class Block>
struct Legacy32Format {
  static constexpr int kUnitElems = 32;
  // The 32 weights of a block with scale d; q points at its quants.
  __device__ static void Unpack(const uint8_t* q, float d, float (&w)[32]) {
    if constexpr (sizeof(Block) == sizeof(BlockQ4_0)) {
      // Low nibbles are elements 0..15, high nibbles 16..31.
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const uint16_t v = Load16(q + 2 * i);
        w[2 * i] = d * (static_cast<int>(v & 0xf) - 8);
        w[2 * i + 16] = d * (static_cast<int>((v >> 4) & 0xf) - 8);
        w[2 * i + 1] = d * (static_cast<int>((v >> 8) & 0xf) - 8);
        w[2 * i + 17] = d * (static_cast<int>(v >> 12) - 8);
      }
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        const uint16_t v = Load16(q + 2 * i);
        w[2 * i] = d * static_cast<int8_t>(v & 0xff);
        w[2 * i + 1] = d * static_cast<int8_t>(v >> 8);
      }
    }
  }
  template <int NT>
  __device__ static void Dot(const uint8_t* row, int64_t u, const float* x, int64_t n_in, int n_tok, float (&acc)[NT]) {
    const uint8_t* b = row + u * sizeof(Block);
    float w[32];
    Unpack(b + 2, Half(Load16(b)), w);
    DotTile<NT>(w, x, n_in, u * 32, n_tok, acc);
  }
};

// Q4_K: unit = (block, 64-element chunk j): sub-blocks 2j and 2j+1 share 32
// bytes of qs (low nibbles the first 32 elements, high the next 32).
struct Q4_KFormat {
  static constexpr int kUnitElems = 64;
  __device__ static void ScaleMin(const uint8_t* s, int j, int* sc, int* m) {
    if (j < 4) {
      *sc = s[j] & 63;
      *m = s[j + 4] & 63;
    } else {
      *sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
      *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
  }
  template <int NT>
  __device__ static void Dot(const uint8_t* row, int64_t u, const float* x, int64_t n_in, int n_tok, float (&acc)[NT]) {
    const int64_t blk = u / 4;
    const int j = static_cast<int>(u % 4);
    const uint8_t* b = row + blk * sizeof(BlockQ4_K);
    const float d = Half(Load16(b));
    const float dmin = Half(Load16(b + 2));
    int sc1, m1, sc2, m2;
    ScaleMin(b + 4, 2 * j, &sc1, &m1);
    ScaleMin(b + 4, 2 * j + 1, &sc2, &m2);
    const float d1 = d * sc1, mn1 = dmin * m1, d2 = d * sc2, mn2 = dmin * m2;
    const uint4* qv = reinterpret_cast<const uint4*>(b + 16 + 32 * j);
    const uint4 q0 = __ldg(qv), q1 = __ldg(qv + 1);
    const uint32_t words[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    float w[64];
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const uint32_t byte = (words[i / 4] >> (8 * (i % 4))) & 0xff;
      w[i] = d1 * static_cast<float>(byte & 0xf) - mn1;
      w[32 + i] = d2 * static_cast<float>(byte >> 4) - mn2;
    }
    DotTile<NT>(w, x, n_in, blk * 256 + 64 * j, n_tok, acc);
  }
};

// Q6_K: unit = (block, 128-element half n, 16-lane group g): elements
// 128n + 16g + 32k + i (k < 4, i < 16), as dequantize_row Q6_K orders them.
struct Q6_KFormat {
  static constexpr int kUnitElems = 64;
  template <int NT>
  __device__ static void Dot(const uint8_t* row, int64_t u, const float* x, int64_t n_in, int n_tok, float (&acc)[NT]) {
    const int64_t blk = u / 4;
    const int n = static_cast<int>(u % 4) / 2;
    const int g = static_cast<int>(u % 2);
    const uint8_t* b = row + blk * sizeof(BlockQ6_K);
    const uint8_t* ql = b + 64 * n + 16 * g;
    const uint8_t* qh = b + 128 + 32 * n + 16 * g;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192) + 8 * n + g;
    const float d = Half(Load16(b + 208));
    const float s0 = d * sc[0], s1 = d * sc[2], s2 = d * sc[4], s3 = d * sc[6];
    float w[4][16];
#pragma unroll
    for (int i = 0; i < 16; i += 2) {
      const uint16_t lo = Load16(ql + i), hi = Load16(ql + 32 + i), h = Load16(qh + i);
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const int l = (lo >> (8 * k)) & 0xff, l2 = (hi >> (8 * k)) & 0xff, hb = (h >> (8 * k)) & 0xff;
        w[0][i + k] = s0 * static_cast<float>(((l & 0xf) | ((hb & 3) << 4)) - 32);
        w[1][i + k] = s1 * static_cast<float>(((l2 & 0xf) | (((hb >> 2) & 3) << 4)) - 32);
        w[2][i + k] = s2 * static_cast<float>(((l >> 4) | (((hb >> 4) & 3) << 4)) - 32);
        w[3][i + k] = s3 * static_cast<float>(((l2 >> 4) | (((hb >> 6) & 3) << 4)) - 32);
      }
    }
    const int64_t e0 = blk * 256 + 128 * n + 16 * g;
#pragma unroll
    for (int k = 0; k < 4; ++k) DotTile<NT>(w[k], x, n_in, e0 + 32 * k, n_tok, acc);
  }
};

// F32 / F16 / BF16 rows read 8 elements (16 or 32 bytes) per unit.
template <DType T>
struct DenseVecFormat {
  static constexpr int kUnitElems = 8;
  template <int NT>
  __device__ static void Dot(const uint8_t* row, int64_t u, const float* x, int64_t n_in, int n_tok, float (&acc)[NT]) {
    float w[8];
    if constexpr (T == DType::kF32) {
      const float4* p = reinterpret_cast<const float4*>(row) + 2 * u;
      const float4 a = __ldg(p), c = __ldg(p + 1);
      w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = c.x, w[5] = c.y, w[6] = c.z, w[7] = c.w;
    } else {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(row) + u);
      const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint16_t lo = words[i] & 0xffff, hi = words[i] >> 16;
        w[2 * i] = T == DType::kF16 ? Half(lo) : Bf16(lo);
        w[2 * i + 1] = T == DType::kF16 ? Half(hi) : Bf16(hi);
      }
    }
    DotTile<NT>(w, x, n_in, u * 8, n_tok, acc);
  }
};

// F32 / F16 / BF16 rows of any length or alignment: one element per unit.
template <DType T>
struct DenseScalarFormat {
  static constexpr int kUnitElems = 1;
  template <int NT>
  __device__ static void Dot(const uint8_t* row, int64_t u, const float* x, int64_t n_in, int n_tok, float (&acc)[NT]) {
    float w;
    if constexpr (T == DType::kF32) {
      w = reinterpret_cast<const float*>(row)[u];
    } else {
      const uint16_t h = reinterpret_cast<const uint16_t*>(row)[u];
      w = T == DType::kF16 ? Half(h) : Bf16(h);
    }
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < n_tok) acc[t] = fmaf(w, __ldg(x + t * n_in + u), acc[t]);
    }
  }
};

template <class F, int NT>
__global__ void __launch_bounds__(kWarp * kRowsPerBlock)
    MatMulKernel(const uint8_t* __restrict__ w, int64_t row_bytes, int64_t n_out, const float* __restrict__ x,
                 int64_t n_in, int64_t n_tokens, float* __restrict__ y) {
  const int lane = threadIdx.x % kWarp;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (r >= n_out) return;
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * NT;
  const int n_tok = static_cast<int>(n_tokens - t0 < NT ? n_tokens - t0 : NT);
  const uint8_t* row = w + r * row_bytes;
  const float* xt = x + t0 * n_in;
  const int64_t n_units = n_in / F::kUnitElems;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
  for (int64_t u = lane; u < n_units; u += kWarp) F::template Dot<NT>(row, u, xt, n_in, n_tok, acc);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    for (int off = kWarp / 2; off > 0; off /= 2) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], off);
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < n_tok) y[(t0 + t) * n_out + r] = acc[t];
    }
  }
}

template <class F>
cudaError_t Launch(cudaStream_t stream, const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y) {
  const dim3 block(kWarp * kRowsPerBlock);
  const unsigned rows = static_cast<unsigned>((w.n_out + kRowsPerBlock - 1) / kRowsPerBlock);
  const uint8_t* data = static_cast<const uint8_t*>(w.data);
  const int64_t row_bytes = RowBytes(w.type, w.n_in);
  if (n_tokens == 1) {
    MatMulKernel<F, 1><<<dim3(rows, 1), block, 0, stream>>>(data, row_bytes, w.n_out, x, w.n_in, 1, y);
  } else {
    constexpr int kTile = 8;
    const unsigned tiles = static_cast<unsigned>((n_tokens + kTile - 1) / kTile);
    MatMulKernel<F, kTile><<<dim3(rows, tiles), block, 0, stream>>>(data, row_bytes, w.n_out, x, w.n_in, n_tokens, y);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchMatMul(cudaStream_t stream, const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y) {
  // Dense rows take the 16-byte path when rows and x allow it.
  const bool vec = reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                   w.n_in % 8 == 0;
  switch (w.type) {
    case DType::kQ4_0: return Launch<Legacy32Format<BlockQ4_0>>(stream, w, x, n_tokens, y);
    case DType::kQ8_0: return Launch<Legacy32Format<BlockQ8_0>>(stream, w, x, n_tokens, y);
    case DType::kQ4_K: return Launch<Q4_KFormat>(stream, w, x, n_tokens, y);
    case DType::kQ6_K: return Launch<Q6_KFormat>(stream, w, x, n_tokens, y);
    case DType::kF32:
      return vec ? Launch<DenseVecFormat<DType::kF32>>(stream, w, x, n_tokens, y)
                 : Launch<DenseScalarFormat<DType::kF32>>(stream, w, x, n_tokens, y);
    case DType::kF16:
      return vec ? Launch<DenseVecFormat<DType::kF16>>(stream, w, x, n_tokens, y)
                 : Launch<DenseScalarFormat<DType::kF16>>(stream, w, x, n_tokens, y);
    case DType::kBF16:
      return vec ? Launch<DenseVecFormat<DType::kBF16>>(stream, w, x, n_tokens, y)
                 : Launch<DenseScalarFormat<DType::kBF16>>(stream, w, x, n_tokens, y);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace pagoda::kernels::cuda
