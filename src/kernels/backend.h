// Backend: one compute device behind the op set of the dense decoder
// (matmul on GGUF blocks, RMSNorm, RoPE, SiLU-gated product, softmax,
// residual add, KV store and paged attention, the batched KV integrity check,
// top-k over logits), with its memory (DeviceBuffer), streams and copies.
//
// Two implementations: the CPU backend (kernels/cpu/cpu_backend.h, a thin
// adapter over the kernels in kernels/cpu; its "device memory" is host memory
// and its stream runs each op at once) and, in builds with PAGODA_CUDA, the
// CUDA backend (kernels/cuda/). MakeBackend picks one from a DeviceSpec.
//
// Validate, then dispatch: each public op checks its arguments on the host
// (shapes, types, sizes: an InvalidArgument Status, nothing enqueued) and then
// enqueues the backend's kernel on the stream. Contents of device memory
// (block ids, positions) are not checked; they must be valid. Ops on one
// stream run in order; a device fault surfaces at the next Synchronize.
// Threading: a Backend and its streams are used by one thread (the engine
// thread). Every buffer and stream must go before its backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kernels/backend_types.h"
#include "kernels/device.h"
#include "kernels/device_buffer.h"

namespace pagoda::kernels {

class Stream {
 public:
  virtual ~Stream() = default;
  // Waits for everything enqueued so far; reports the first failure of an
  // enqueued op or copy (a launch error, a device fault).
  [[nodiscard]] virtual Status Synchronize() = 0;
};

class Backend : public DeviceMemory {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const = 0;
  // "cpu (N threads)", "cuda:0 NVIDIA H200 (sm_90, 132 SMs, 139 GiB)".
  virtual std::string name() const = 0;

  // ---- memory, streams, copies -------------------------------------------
  // At least 256-byte aligned. ResourceExhausted when the device is full.
  virtual Result<DeviceBuffer> Allocate(int64_t bytes) = 0;
  virtual Stream& default_stream() = 0;
  virtual Result<std::unique_ptr<Stream>> CreateStream() = 0;
  // Asynchronous on CUDA: `host` must stay valid (and unchanged, for
  // uploads) until the stream is synchronised.
  virtual Status CopyToDevice(Stream& s, const void* host, void* device, int64_t bytes) = 0;
  virtual Status CopyToHost(Stream& s, const void* device, void* host, int64_t bytes) = 0;
  virtual Status CopyOnDevice(Stream& s, const void* src, void* dst, int64_t bytes) = 0;

  // ---- ops ------------------------------------------------------------------
  // Whether MatMul takes weights of this type on this backend.
  virtual bool SupportsMatMul(DType type) const = 0;
  // y = x * W^T. x: [n_tokens, n_in] f32, y: [n_tokens, n_out] f32.
  Status MatMul(Stream& s, const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y);
  // y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w (w may be null); rows of n.
  Status RmsNorm(Stream& s, const float* x, const float* w, float eps, int64_t n_rows, int64_t n, float* y);
  // cos/sin[t * n_half + i] of angle positions[t] * inv_freq[i] (angle in
  // double, as kernels::RopeTables). inv_freq comes from RopeInvFreq or
  // RopeYarnInvFreq (every RoPE variant the CPU has differs only there).
  Status RopeTables(Stream& s, const double* inv_freq, int n_half, const int32_t* positions, int64_t n_tokens,
                    float* cos, float* sin);
  // kernels::Rope on the device: the first n_rot dims of each head, in place.
  Status Rope(Stream& s, float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim, int n_rot,
              bool neox, const float* cos, const float* sin);
  // Softmax of each of n_rows rows of n floats, in place.
  Status Softmax(Stream& s, float* x, int64_t n_rows, int64_t n);
  // out[i] = silu(gate[i]) * up[i]; out may alias gate or up.
  Status SiluMul(Stream& s, const float* gate, const float* up, int64_t n, float* out);
  // out[i] = a[i] + b[i] (the residual stream); out may alias a or b.
  Status Add(Stream& s, const float* a, const float* b, int64_t n, float* out);
  // Stores the K/V rows of the batch at (row_seq[r], positions[r]) in the
  // pool, converted to the pool's type as StoreKvRow / StoreKvRowQuantized do.
  //   k: [n_rows, n_head_kv * head_dim_k] row stride k_stride; v likewise.
  Status StoreKv(Stream& s, const KvPoolView& pool, const PagedBatch& batch, const float* k, int64_t k_stride,
                 const float* v, int64_t v_stride);
  // Causal attention of each row over its sequence's stored K/V (GQA: head h
  // reads KV head h / (n_head / n_head_kv)). Online softmax in f32.
  //   q: [n_rows, n_head * head_dim_k], out: [n_rows, n_head * head_dim_v].
  Status PagedAttention(Stream& s, const AttentionShape& shape, const KvPoolView& pool, const PagedBatch& batch,
                        const float* q, int64_t q_stride, float* out, int64_t out_stride);
  // result[s] (int32, per sequence): kKvIntact, kKvLengthChanged or the
  // first bad table entry; the rule of kv::IntegrityTracker::Check.
  Status KvIntegrityCheck(Stream& s, const KvIntegrityBatch& batch, int32_t* result);
  // The k largest logits of each row, best first (ties: smaller id first;
  // NaN never chosen; slots beyond the row's non-NaN entries get -inf, -1).
  //   logits: [n_rows, n_vocab]; values, ids: [n_rows, k]; 1 <= k <= kMaxTopK.
  Status TopK(Stream& s, const float* logits, int64_t n_rows, int64_t n_vocab, int k, float* values, int32_t* ids);

 protected:
  virtual Status CheckMatrix(const DeviceMatrix& w) const = 0;
  virtual Status RunMatMul(Stream& s, const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y) = 0;
  virtual Status RunRmsNorm(Stream& s, const float* x, const float* w, float eps, int64_t n_rows, int64_t n,
                            float* y) = 0;
  virtual Status RunRopeTables(Stream& s, const double* inv_freq, int n_half, const int32_t* positions,
                               int64_t n_tokens, float* cos, float* sin) = 0;
  virtual Status RunRope(Stream& s, float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim,
                         int n_rot, bool neox, const float* cos, const float* sin) = 0;
  virtual Status RunSoftmax(Stream& s, float* x, int64_t n_rows, int64_t n) = 0;
  virtual Status RunSiluMul(Stream& s, const float* gate, const float* up, int64_t n, float* out) = 0;
  virtual Status RunAdd(Stream& s, const float* a, const float* b, int64_t n, float* out) = 0;
  virtual Status RunStoreKv(Stream& s, const KvPoolView& pool, const PagedBatch& batch, const float* k,
                            int64_t k_stride, const float* v, int64_t v_stride) = 0;
  virtual Status RunPagedAttention(Stream& s, const AttentionShape& shape, const KvPoolView& pool,
                                   const PagedBatch& batch, const float* q, int64_t q_stride, float* out,
                                   int64_t out_stride) = 0;
  virtual Status RunKvIntegrityCheck(Stream& s, const KvIntegrityBatch& batch, int32_t* result) = 0;
  virtual Status RunTopK(Stream& s, const float* logits, int64_t n_rows, int64_t n_vocab, int k, float* values,
                         int32_t* ids) = 0;
};

// The backend of `spec`. The CPU backend runs its ops on `pool` (which must
// outlive it). CUDA: Unimplemented in a build without PAGODA_CUDA ("this
// build has no CUDA support"), FailedPrecondition when the CUDA runtime finds
// no usable device ("no CUDA device: <runtime's reason>"), NotFound for an
// ordinal past the last device ("CUDA device N not present: M device(s)").
Result<std::unique_ptr<Backend>> MakeBackend(const DeviceSpec& spec, ThreadPool& pool);

}  // namespace pagoda::kernels
