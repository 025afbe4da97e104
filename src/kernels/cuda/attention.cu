// KV store into the paged pool and causal paged attention over it (decode and
// prefill rows alike: each row attends to its sequence's positions
// [0, positions[row]] through the block table). References: StoreKvRow /
// StoreKvRowQuantized and AttentionReference (kernels/cpu/ops.h); the fp8
// encoder and scale rule are the CPU's own (kernels/kv_codec_bits.h).
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cfloat>
#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"

// The CPU codec's encoders, compiled for the device too.
#define PAGODA_KV_CODEC_FN __host__ __device__ inline
#include "kernels/kv_codec_bits.h"

namespace pagoda::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kAttnWarps = 4;
constexpr int kMaxGroup = 8;  // query heads per thread block (more: split over blockIdx.y)
constexpr int kDimsPerLane = kMaxDeviceHeadDim / kWarp;

// ---- element codecs ----------------------------------------------------------
__device__ __forceinline__ int8_t FloatToInt8(float x) {
  if (x != x) return 0;
  return static_cast<int8_t>(rintf(fminf(fmaxf(x, -127.0f), 127.0f)));
}

__device__ __forceinline__ uint16_t FloatToBf16(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// The E8M0 scale byte of a head row with largest magnitude amax (KvScaleByte).
__device__ __forceinline__ uint8_t ScaleByte(KvType t, float amax) {
  if (!(amax > 0.0f)) return 0;
  return static_cast<uint8_t>(internal::KvScaleExponent(amax, t == KvType::kFp8E4M3 ? 448.0f : 127.0f) + 127);
}

__device__ __forceinline__ float ScaleValue(uint8_t e) { return __uint_as_float(static_cast<uint32_t>(e) << 23); }

template <KvType T>
__device__ __forceinline__ float Load(const void* base, int64_t i) {
  if constexpr (T == KvType::kF32) {
    return static_cast<const float*>(base)[i];
  } else if constexpr (T == KvType::kF16) {
    return __half2float(static_cast<const __half*>(base)[i]);
  } else if constexpr (T == KvType::kBf16) {
    return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(base)[i]) << 16);
  } else if constexpr (T == KvType::kFp8E4M3) {
    const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<const __nv_fp8_storage_t*>(base)[i], __NV_E4M3);
    return __half2float(__half(h));
  } else {
    return static_cast<float>(static_cast<const int8_t*>(base)[i]);
  }
}

// ---- store -------------------------------------------------------------------
// Block (row, K or V): warp w stores heads w, w + 4, ...
__global__ void StoreKvKernel(KvPoolView p, PagedBatch b, const float* k, int64_t k_stride, const float* v,
                              int64_t v_stride) {
  const int64_t r = blockIdx.x;
  const bool is_k = blockIdx.y == 0;
  const int head_dim = is_k ? p.head_dim_k : p.head_dim_v;
  const float* src = (is_k ? k + r * k_stride : v + r * v_stride);
  const int32_t pos = b.positions[r];
  const int32_t block = b.block_tables[static_cast<int64_t>(b.row_seq[r]) * b.max_blocks + pos / p.block_size];
  if (block < 0 || block >= p.n_blocks) return;  // invalid table: contract broken, write nothing
  const int32_t slot = pos % p.block_size;
  const int64_t first = (static_cast<int64_t>(block) * p.block_size + slot) * p.n_head_kv * head_dim;
  void* base = is_k ? p.k : p.v;
  const int lane = threadIdx.x % kWarp;
  for (int h = threadIdx.x / kWarp; h < p.n_head_kv; h += blockDim.x / kWarp) {
    const float* x = src + static_cast<int64_t>(h) * head_dim;
    const int64_t dst = first + static_cast<int64_t>(h) * head_dim;
    if (p.type == KvType::kFp8E4M3 || p.type == KvType::kInt8) {
      float amax = 0.0f;
      for (int d = lane; d < head_dim; d += kWarp) amax = fmaxf(amax, fabsf(x[d]));  // NaN ignored
      for (int off = kWarp / 2; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
      amax = fminf(amax, FLT_MAX);
      const uint8_t e = ScaleByte(p.type, amax);
      const float scale = ScaleValue(e);
      const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
      if (lane == 0) {
        uint8_t* scales = is_k ? p.k_scales : p.v_scales;
        scales[(static_cast<int64_t>(block) * p.n_head_kv + h) * p.block_size + slot] = e;
      }
      uint8_t* codes = static_cast<uint8_t*>(base);
      for (int d = lane; d < head_dim; d += kWarp) {
        codes[dst + d] = p.type == KvType::kFp8E4M3 ? internal::EncodeFp8E4M3(x[d] * inv)
                                                    : static_cast<uint8_t>(FloatToInt8(x[d] * inv));
      }
    } else {
      for (int d = lane; d < head_dim; d += kWarp) {
        if (p.type == KvType::kF32) {
          static_cast<float*>(base)[dst + d] = x[d];
        } else if (p.type == KvType::kF16) {
          static_cast<__half*>(base)[dst + d] = __float2half_rn(x[d]);
        } else {
          static_cast<uint16_t*>(base)[dst + d] = FloatToBf16(x[d]);
        }
      }
    }
  }
}

// ---- attention ---------------------------------------------------------------
// Block (row, KV head x head group): up to kMaxGroup query heads sharing one
// KV head. Each warp takes every kAttnWarps-th position with an online
// softmax per head (lane i holds dims lane + 32 i); the warps merge in shared
// memory at the end.
template <KvType T>
__global__ void __launch_bounds__(kWarp * kAttnWarps)
    PagedAttentionKernel(AttentionShape sh, KvPoolView p, PagedBatch b, const float* q, int64_t q_stride, float* out,
                         int64_t out_stride, int n_groups) {
  __shared__ float q_s[kMaxGroup][kMaxDeviceHeadDim];
  __shared__ float m_s[kAttnWarps][kMaxGroup];
  __shared__ float l_s[kAttnWarps][kMaxGroup];
  __shared__ float acc_s[kAttnWarps][kMaxGroup][kMaxDeviceHeadDim];

  const int64_t r = blockIdx.x;
  const int kvh = static_cast<int>(blockIdx.y) / n_groups;
  const int ratio = sh.n_head / sh.n_head_kv;
  const int h0 = kvh * ratio + (static_cast<int>(blockIdx.y) % n_groups) * kMaxGroup;
  const int n_h = min(kMaxGroup, kvh * ratio + ratio - h0);
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int dk = sh.head_dim_k, dv = sh.head_dim_v;

  for (int i = threadIdx.x; i < n_h * dk; i += blockDim.x) {
    const float x = q[r * q_stride + static_cast<int64_t>(h0 + i / dk) * dk + i % dk];
    // An f16 cache multiplies an f16 query, as the CPU kernel (and ggml) do.
    q_s[i / dk][i % dk] = T == KvType::kF16 ? __half2float(__float2half_rn(x)) : x;
  }
  __syncthreads();

  float m[kMaxGroup], l[kMaxGroup], acc[kMaxGroup][kDimsPerLane];
#pragma unroll
  for (int h = 0; h < kMaxGroup; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) acc[h][i] = 0.0f;
  }
  const int32_t last = b.positions[r];
  const int32_t* table = b.block_tables + static_cast<int64_t>(b.row_seq[r]) * b.max_blocks;
  const bool scaled = T == KvType::kFp8E4M3 || T == KvType::kInt8;
  for (int32_t j = warp; j <= last; j += kAttnWarps) {
    const int32_t block = table[j / p.block_size];
    if (block < 0 || block >= p.n_blocks) continue;  // invalid table: contract broken, skip
    const int32_t slot = j % p.block_size;
    const int64_t pos_index = static_cast<int64_t>(block) * p.block_size + slot;
    const int64_t scale_index = (static_cast<int64_t>(block) * p.n_head_kv + kvh) * p.block_size + slot;
    const float ks = scaled ? ScaleValue(p.k_scales[scale_index]) : 1.0f;
    const float vs = scaled ? ScaleValue(p.v_scales[scale_index]) : 1.0f;
    const int64_t k0 = (pos_index * p.n_head_kv + kvh) * dk;
    const int64_t v0 = (pos_index * p.n_head_kv + kvh) * dv;
    float kr[kDimsPerLane], vr[kDimsPerLane];
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
      const int d = lane + kWarp * i;
      kr[i] = d < dk ? Load<T>(p.k, k0 + d) * ks : 0.0f;
      vr[i] = d < dv ? Load<T>(p.v, v0 + d) * vs : 0.0f;
    }
#pragma unroll
    for (int h = 0; h < kMaxGroup; ++h) {
      if (h >= n_h) break;
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < kDimsPerLane; ++i) {
        const int d = lane + kWarp * i;
        if (d < dk) s = fmaf(q_s[h][d], kr[i], s);
      }
      for (int off = kWarp / 2; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
      s *= sh.scale;
      const float m_new = fmaxf(m[h], s);
      const float corr = expf(m[h] - m_new);
      const float w = expf(s - m_new);
      l[h] = l[h] * corr + w;
#pragma unroll
      for (int i = 0; i < kDimsPerLane; ++i) acc[h][i] = acc[h][i] * corr + w * vr[i];
      m[h] = m_new;
    }
  }
#pragma unroll
  for (int h = 0; h < kMaxGroup; ++h) {
    if (h >= n_h) break;
    if (lane == 0) {
      m_s[warp][h] = m[h];
      l_s[warp][h] = l[h];
    }
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) {
      const int d = lane + kWarp * i;
      if (d < dv) acc_s[warp][h][d] = acc[h][i];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < n_h * dv; i += blockDim.x) {
    const int h = i / dv, d = i % dv;
    float mx = -INFINITY;
    for (int w = 0; w < kAttnWarps; ++w) mx = fmaxf(mx, m_s[w][h]);
    float sum = 0.0f, o = 0.0f;
    for (int w = 0; w < kAttnWarps; ++w) {
      if (m_s[w][h] == -INFINITY) continue;  // a warp that saw no position
      const float c = expf(m_s[w][h] - mx);
      sum += l_s[w][h] * c;
      o += acc_s[w][h][d] * c;
    }
    out[r * out_stride + static_cast<int64_t>(h0 + h) * dv + d] = o / sum;
  }
}

}  // namespace

cudaError_t LaunchStoreKv(cudaStream_t stream, const KvPoolView& pool, const PagedBatch& batch, const float* k,
                          int64_t k_stride, const float* v, int64_t v_stride) {
  StoreKvKernel<<<dim3(static_cast<unsigned>(batch.n_rows), 2), kWarp * 4, 0, stream>>>(pool, batch, k, k_stride, v,
                                                                                       v_stride);
  return cudaGetLastError();
}

cudaError_t LaunchPagedAttention(cudaStream_t stream, const AttentionShape& shape, const KvPoolView& pool,
                                 const PagedBatch& batch, const float* q, int64_t q_stride, float* out,
                                 int64_t out_stride) {
  const int ratio = shape.n_head / shape.n_head_kv;
  const int n_groups = (ratio + kMaxGroup - 1) / kMaxGroup;
  const dim3 grid(static_cast<unsigned>(batch.n_rows), static_cast<unsigned>(shape.n_head_kv * n_groups));
  const dim3 block(kWarp * kAttnWarps);
  switch (pool.type) {
    case KvType::kF32:
      PagedAttentionKernel<KvType::kF32><<<grid, block, 0, stream>>>(shape, pool, batch, q, q_stride, out, out_stride, n_groups);
      break;
    case KvType::kF16:
      PagedAttentionKernel<KvType::kF16><<<grid, block, 0, stream>>>(shape, pool, batch, q, q_stride, out, out_stride, n_groups);
      break;
    case KvType::kBf16:
      PagedAttentionKernel<KvType::kBf16><<<grid, block, 0, stream>>>(shape, pool, batch, q, q_stride, out, out_stride, n_groups);
      break;
    case KvType::kFp8E4M3:
      PagedAttentionKernel<KvType::kFp8E4M3><<<grid, block, 0, stream>>>(shape, pool, batch, q, q_stride, out, out_stride, n_groups);
      break;
    case KvType::kInt8:
      PagedAttentionKernel<KvType::kInt8><<<grid, block, 0, stream>>>(shape, pool, batch, q, q_stride, out, out_stride, n_groups);
      break;
  }
  return cudaGetLastError();
}

}  // namespace pagoda::kernels::cuda
