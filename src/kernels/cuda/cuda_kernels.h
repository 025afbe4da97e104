// Launchers of the CUDA kernels (internal to kernels/cuda): each enqueues one
// op on `stream` and returns the launch's error (cudaGetLastError). Arguments
// were validated by Backend; shapes follow kernels/backend.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/backend_types.h"

namespace pagoda::kernels::cuda {

// Quantized weights: x 16-byte aligned; Q4_K data 16-byte aligned, the other
// block types 2-byte aligned (checked by the backend). Dense weights: any.
cudaError_t LaunchMatMul(cudaStream_t stream, const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y);

cudaError_t LaunchRmsNorm(cudaStream_t stream, const float* x, const float* w, float eps, int64_t n_rows, int64_t n,
                          float* y);
cudaError_t LaunchRopeTables(cudaStream_t stream, const double* inv_freq, int n_half, const int32_t* positions,
                             int64_t n_tokens, float* cos, float* sin);
cudaError_t LaunchRope(cudaStream_t stream, float* x, int64_t n_tokens, int64_t row_stride, int n_heads,
                       int head_dim, int n_rot, bool neox, const float* cos, const float* sin);
cudaError_t LaunchSoftmax(cudaStream_t stream, float* x, int64_t n_rows, int64_t n);
cudaError_t LaunchSiluMul(cudaStream_t stream, const float* gate, const float* up, int64_t n, float* out);
cudaError_t LaunchAdd(cudaStream_t stream, const float* a, const float* b, int64_t n, float* out);
cudaError_t LaunchTopK(cudaStream_t stream, const float* logits, int64_t n_rows, int64_t n_vocab, int k,
                       float* values, int32_t* ids);
cudaError_t LaunchKvIntegrityCheck(cudaStream_t stream, const KvIntegrityBatch& batch, int32_t* result);

cudaError_t LaunchStoreKv(cudaStream_t stream, const KvPoolView& pool, const PagedBatch& batch, const float* k,
                          int64_t k_stride, const float* v, int64_t v_stride);
cudaError_t LaunchPagedAttention(cudaStream_t stream, const AttentionShape& shape, const KvPoolView& pool,
                                 const PagedBatch& batch, const float* q, int64_t q_stride, float* out,
                                 int64_t out_stride);

}  // namespace pagoda::kernels::cuda
