// Element-wise and reduction kernels: RMSNorm, RoPE tables and rotation,
// softmax, SiLU-gated product, residual add, top-k over logits and the
// batched KV integrity check. References: kernels::RmsNorm, RopeTables, Rope,
// Softmax, SiluMul (kernels/cpu/ops.h), TopK (topk.h), KvIntegrityCheck
// (kv_integrity.h).
#include <cfloat>
#include <cstdint>

#include "kernels/cuda/cuda_kernels.h"

namespace pagoda::kernels::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kThreads = 256;

unsigned Blocks(int64_t n, int per) { return static_cast<unsigned>((n + per - 1) / per); }

// Sum over the thread block (blockDim.x a multiple of 32, <= 1024); every thread gets it.
template <class T>
__device__ T BlockSum(T v, T* shared) {
  for (int off = kWarp / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x / kWarp, n_warps = blockDim.x / kWarp;
  __syncthreads();  // shared may still be read by a previous call
  if (threadIdx.x % kWarp == 0) shared[warp] = v;
  __syncthreads();
  T total = 0;
  for (int i = 0; i < n_warps; ++i) total += shared[i];
  return total;
}

__device__ float BlockMax(float v, float* shared) {
  for (int off = kWarp / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int warp = threadIdx.x / kWarp, n_warps = blockDim.x / kWarp;
  __syncthreads();
  if (threadIdx.x % kWarp == 0) shared[warp] = v;
  __syncthreads();
  float m = -FLT_MAX;
  for (int i = 0; i < n_warps; ++i) m = fmaxf(m, shared[i]);
  return m;
}

__global__ void RmsNormKernel(const float* x, const float* w, float eps, int64_t n, float* y) {
  __shared__ double shared[kThreads / kWarp];
  const float* xr = x + blockIdx.x * n;
  float* yr = y + blockIdx.x * n;
  float part = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) part = fmaf(xr[i], xr[i], part);
  const double sum = BlockSum<double>(part, shared);
  const float scale = static_cast<float>(1.0 / sqrt(sum / static_cast<double>(n) + eps));
  // x and y may alias: each element is read before it is written, by the same thread.
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = w != nullptr ? xr[i] * scale * w[i] : xr[i] * scale;
}

__global__ void RopeTablesKernel(const double* inv_freq, int n_half, const int32_t* pos, int64_t n, float* cos_out,
                                 float* sin_out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t t = i / n_half;
  const double theta = pos[t] * inv_freq[i % n_half];  // double, as on the CPU
  cos_out[i] = static_cast<float>(cos(theta));
  sin_out[i] = static_cast<float>(sin(theta));
}

__global__ void RopeKernel(float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim, int n_half,
                           bool neox, const float* cos_t, const float* sin_t) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_tokens * n_heads * n_half) return;
  const int pair = static_cast<int>(i % n_half);
  const int h = static_cast<int>(i / n_half % n_heads);
  const int64_t t = i / n_half / n_heads;
  float* v = x + t * row_stride + static_cast<int64_t>(h) * head_dim;
  float* a = neox ? v + pair : v + 2 * pair;
  float* b = neox ? v + pair + n_half : v + 2 * pair + 1;
  const float c = cos_t[t * n_half + pair], s = sin_t[t * n_half + pair];
  const float x0 = *a, x1 = *b;
  *a = x0 * c - x1 * s;
  *b = x0 * s + x1 * c;
}

__global__ void SoftmaxKernel(float* x, int64_t n) {
  __shared__ float fshared[kThreads / kWarp];
  __shared__ double dshared[kThreads / kWarp];
  float* xr = x + blockIdx.x * n;
  float m = -FLT_MAX;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, xr[i]);
  m = BlockMax(m, fshared);
  float part = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float e = expf(xr[i] - m);
    xr[i] = e;
    part += e;
  }
  const float inv = static_cast<float>(1.0 / BlockSum<double>(part, dshared));
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) xr[i] *= inv;
}

__global__ void SiluMulKernel(const float* gate, const float* up, int64_t n, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  out[i] = g / (1.0f + expf(-g)) * up[i];
}

__global__ void AddKernel(const float* a, const float* b, int64_t n, float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

// ---- top-k -----------------------------------------------------------------
// Order of Backend::TopK (kernels/cpu/topk.h): (a, ia) before (b, ib).
__device__ __forceinline__ bool Before(float a, int32_t ia, float b, int32_t ib) {
  if (ia < 0 || a != a) return false;
  if (ib < 0) return true;
  return a > b || (a == b && ia < ib);
}

struct Candidate {
  float v;
  int32_t id;
  int32_t owner;  // thread holding it
};

__device__ Candidate WarpBest(Candidate c) {
  for (int off = kWarp / 2; off > 0; off /= 2) {
    Candidate o;
    o.v = __shfl_xor_sync(0xffffffffu, c.v, off);
    o.id = __shfl_xor_sync(0xffffffffu, c.id, off);
    o.owner = __shfl_xor_sync(0xffffffffu, c.owner, off);
    if (Before(o.v, o.id, c.v, c.id)) c = o;
  }
  return c;
}

// One thread block per row: each thread keeps the sorted best k of its
// strided share; k rounds of a block-wide best over the threads' heads merge them.
__global__ void __launch_bounds__(kThreads) TopKKernel(const float* logits, int64_t n_vocab, int k, float* values,
                                                       int32_t* ids) {
  __shared__ Candidate warp_best[kThreads / kWarp];
  __shared__ Candidate best;
  const float* x = logits + blockIdx.x * n_vocab;
  float val[kMaxTopK];
  int32_t id[kMaxTopK];
  for (int i = 0; i < k; ++i) {
    val[i] = -INFINITY;
    id[i] = -1;
  }
  for (int64_t j = threadIdx.x; j < n_vocab; j += blockDim.x) {
    const float v = x[j];
    const int32_t jj = static_cast<int32_t>(j);
    if (!Before(v, jj, val[k - 1], id[k - 1])) continue;
    int i = k - 1;
    while (i > 0 && Before(v, jj, val[i - 1], id[i - 1])) {
      val[i] = val[i - 1];
      id[i] = id[i - 1];
      --i;
    }
    val[i] = v;
    id[i] = jj;
  }
  int head = 0;
  for (int round = 0; round < k; ++round) {
    Candidate c{head < k ? val[head] : -INFINITY, head < k ? id[head] : -1, static_cast<int32_t>(threadIdx.x)};
    c = WarpBest(c);
    if (threadIdx.x % kWarp == 0) warp_best[threadIdx.x / kWarp] = c;
    __syncthreads();
    if (threadIdx.x < kWarp) {
      Candidate w = threadIdx.x < blockDim.x / kWarp ? warp_best[threadIdx.x] : Candidate{-INFINITY, -1, -1};
      w = WarpBest(w);
      if (threadIdx.x == 0) {
        best = w;
        values[blockIdx.x * k + round] = w.id < 0 ? -INFINITY : w.v;
        ids[blockIdx.x * k + round] = w.id;
      }
    }
    __syncthreads();
    if (best.id >= 0 && best.owner == static_cast<int32_t>(threadIdx.x)) ++head;
    __syncthreads();  // best is rewritten next round
  }
}

// ---- KV integrity ------------------------------------------------------------
// A warp per sequence: lanes over the table entries, the first bad one by a
// ballot per 32 entries.
__global__ void KvIntegrityKernel(KvIntegrityBatch b, int32_t* result) {
  const int32_t s = static_cast<int32_t>((static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp);
  const int lane = threadIdx.x % kWarp;
  if (s >= b.n_seqs) return;
  const int32_t r0 = b.recorded_offsets[s];
  const int32_t n = b.recorded_offsets[s + 1] - r0;
  const int32_t l0 = b.live_offsets[s];
  if (b.live_offsets[s + 1] - l0 != n) {
    if (lane == 0) result[s] = kKvLengthChanged;
    return;
  }
  int32_t first_bad = kKvIntact;
  for (int32_t base = 0; base < n; base += kWarp) {
    const int32_t i = base + lane;
    bool bad = false;
    if (i < n) {
      const int32_t live = b.live_ids[l0 + i];
      const bool in_range = static_cast<uint32_t>(live) < static_cast<uint32_t>(b.n_blocks);
      bad = !(in_range && live == b.recorded_ids[r0 + i] && b.pool_tags[live] == b.recorded_tags[r0 + i] &&
              b.pool_refs[live] > 0);
    }
    const unsigned mask = __ballot_sync(0xffffffffu, bad);
    if (mask != 0) {
      first_bad = base + __ffs(mask) - 1;
      break;
    }
  }
  if (lane == 0) result[s] = first_bad;
}

}  // namespace

cudaError_t LaunchRmsNorm(cudaStream_t stream, const float* x, const float* w, float eps, int64_t n_rows, int64_t n,
                          float* y) {
  RmsNormKernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, w, eps, n, y);
  return cudaGetLastError();
}

cudaError_t LaunchRopeTables(cudaStream_t stream, const double* inv_freq, int n_half, const int32_t* positions,
                             int64_t n_tokens, float* cos, float* sin) {
  const int64_t n = n_tokens * n_half;
  RopeTablesKernel<<<Blocks(n, kThreads), kThreads, 0, stream>>>(inv_freq, n_half, positions, n, cos, sin);
  return cudaGetLastError();
}

cudaError_t LaunchRope(cudaStream_t stream, float* x, int64_t n_tokens, int64_t row_stride, int n_heads,
                       int head_dim, int n_rot, bool neox, const float* cos, const float* sin) {
  const int n_half = n_rot / 2;
  const int64_t n = n_tokens * n_heads * n_half;
  RopeKernel<<<Blocks(n, kThreads), kThreads, 0, stream>>>(x, n_tokens, row_stride, n_heads, head_dim, n_half, neox,
                                                           cos, sin);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmax(cudaStream_t stream, float* x, int64_t n_rows, int64_t n) {
  SoftmaxKernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, n);
  return cudaGetLastError();
}

cudaError_t LaunchSiluMul(cudaStream_t stream, const float* gate, const float* up, int64_t n, float* out) {
  SiluMulKernel<<<Blocks(n, kThreads), kThreads, 0, stream>>>(gate, up, n, out);
  return cudaGetLastError();
}

cudaError_t LaunchAdd(cudaStream_t stream, const float* a, const float* b, int64_t n, float* out) {
  AddKernel<<<Blocks(n, kThreads), kThreads, 0, stream>>>(a, b, n, out);
  return cudaGetLastError();
}

cudaError_t LaunchTopK(cudaStream_t stream, const float* logits, int64_t n_rows, int64_t n_vocab, int k,
                       float* values, int32_t* ids) {
  TopKKernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(logits, n_vocab, k, values, ids);
  return cudaGetLastError();
}

cudaError_t LaunchKvIntegrityCheck(cudaStream_t stream, const KvIntegrityBatch& batch, int32_t* result) {
  constexpr int kWarpsPerBlock = 4;
  KvIntegrityKernel<<<Blocks(batch.n_seqs, kWarpsPerBlock), kWarp * kWarpsPerBlock, 0, stream>>>(batch, result);
  return cudaGetLastError();
}

}  // namespace pagoda::kernels::cuda
