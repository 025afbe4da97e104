// CudaBackend: device memory, streams and copies through the CUDA runtime
// (linked statically, so the binary starts where no toolkit is installed),
// and the ops as the kernels of matmul.cu, ops.cu and attention.cu.
#include "kernels/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_kernels.h"

namespace pagoda::kernels {
namespace {

Status CudaStatus(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return Status::Ok();
  return Internal("cuda: " + what + ": " + cudaGetErrorString(err));
}

class CudaStream final : public Stream {
 public:
  explicit CudaStream(cudaStream_t s) : stream_(s) {}
  ~CudaStream() override { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  Status Synchronize() override { return CudaStatus(cudaStreamSynchronize(stream_), "stream synchronize"); }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_;
};

cudaStream_t Native(Stream& s) {
  auto* cs = dynamic_cast<CudaStream*>(&s);
  PAGODA_CHECK(cs != nullptr) << "a stream of another backend passed to the CUDA backend";
  return cs->get();
}

bool Aligned(const void* p, uintptr_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; }

class CudaBackend final : public Backend {
 public:
  CudaBackend(int ordinal, const cudaDeviceProp& prop, cudaStream_t stream)
      : ordinal_(ordinal), prop_(prop), stream_(stream) {}

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string name() const override {
    return "cuda:" + std::to_string(ordinal_) + " " + prop_.name + " (sm_" + std::to_string(prop_.major) +
           std::to_string(prop_.minor) + ", " + std::to_string(prop_.multiProcessorCount) + " SMs, " +
           std::to_string(prop_.totalGlobalMem >> 30) + " GiB)";
  }

  Result<DeviceBuffer> Allocate(int64_t bytes) override {
    if (bytes <= 0) return InvalidArgument("Allocate: size must be positive");
    PAGODA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal_), "set device"));
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, static_cast<size_t>(bytes));
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear it: an allocation failure is not sticky
      return ResourceExhausted("cuda:" + std::to_string(ordinal_) + ": cannot allocate " + std::to_string(bytes) +
                               " bytes: " + cudaGetErrorString(err));
    }
    return DeviceBuffer(p, bytes, this);
  }
  void Free(void* data) noexcept override { cudaFree(data); }

  Stream& default_stream() override { return stream_; }
  Result<std::unique_ptr<Stream>> CreateStream() override {
    PAGODA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal_), "set device"));
    cudaStream_t s = nullptr;
    PAGODA_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "create stream"));
    return std::unique_ptr<Stream>(new CudaStream(s));
  }

  Status CopyToDevice(Stream& s, const void* host, void* device, int64_t bytes) override {
    return CudaStatus(cudaMemcpyAsync(device, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, Native(s)),
                      "copy to device");
  }
  Status CopyToHost(Stream& s, const void* device, void* host, int64_t bytes) override {
    return CudaStatus(cudaMemcpyAsync(host, device, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, Native(s)),
                      "copy to host");
  }
  Status CopyOnDevice(Stream& s, const void* src, void* dst, int64_t bytes) override {
    return CudaStatus(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, Native(s)),
                      "copy on device");
  }

  bool SupportsMatMul(DType t) const override {
    return t == DType::kQ4_0 || t == DType::kQ8_0 || t == DType::kQ4_K || t == DType::kQ6_K || t == DType::kF16 ||
           t == DType::kBF16 || t == DType::kF32;
  }

 protected:
  Status CheckMatrix(const DeviceMatrix& w) const override {
    // Q4_K reads its quants with 16-byte loads; the other types need their element alignment.
    const uintptr_t need = w.type == DType::kQ4_K ? 16 : w.type == DType::kF32 ? 4 : 2;
    if (!Aligned(w.data, need)) {
      return InvalidArgument("MatMul: " + std::string(DTypeName(w.type)) + " data must be " + std::to_string(need) +
                             "-byte aligned");
    }
    return Status::Ok();
  }
  Status RunMatMul(Stream& s, const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y) override {
    const bool dense = w.type == DType::kF32 || w.type == DType::kF16 || w.type == DType::kBF16;
    if (!dense && !Aligned(x, 16)) return InvalidArgument("MatMul: x must be 16-byte aligned for quantized weights");
    return CudaStatus(cuda::LaunchMatMul(Native(s), w, x, n_tokens, y), "matmul");
  }
  Status RunRmsNorm(Stream& s, const float* x, const float* w, float eps, int64_t n_rows, int64_t n,
                    float* y) override {
    return CudaStatus(cuda::LaunchRmsNorm(Native(s), x, w, eps, n_rows, n, y), "rms_norm");
  }
  Status RunRopeTables(Stream& s, const double* inv_freq, int n_half, const int32_t* positions, int64_t n_tokens,
                       float* cos, float* sin) override {
    return CudaStatus(cuda::LaunchRopeTables(Native(s), inv_freq, n_half, positions, n_tokens, cos, sin),
                      "rope_tables");
  }
  Status RunRope(Stream& s, float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim, int n_rot,
                 bool neox, const float* cos, const float* sin) override {
    return CudaStatus(cuda::LaunchRope(Native(s), x, n_tokens, row_stride, n_heads, head_dim, n_rot, neox, cos, sin),
                      "rope");
  }
  Status RunSoftmax(Stream& s, float* x, int64_t n_rows, int64_t n) override {
    return CudaStatus(cuda::LaunchSoftmax(Native(s), x, n_rows, n), "softmax");
  }
  Status RunSiluMul(Stream& s, const float* gate, const float* up, int64_t n, float* out) override {
    return CudaStatus(cuda::LaunchSiluMul(Native(s), gate, up, n, out), "silu_mul");
  }
  Status RunAdd(Stream& s, const float* a, const float* b, int64_t n, float* out) override {
    return CudaStatus(cuda::LaunchAdd(Native(s), a, b, n, out), "add");
  }
  Status RunStoreKv(Stream& s, const KvPoolView& p, const PagedBatch& b, const float* k, int64_t k_stride,
                    const float* v, int64_t v_stride) override {
    return CudaStatus(cuda::LaunchStoreKv(Native(s), p, b, k, k_stride, v, v_stride), "store_kv");
  }
  Status RunPagedAttention(Stream& s, const AttentionShape& shape, const KvPoolView& p, const PagedBatch& b,
                           const float* q, int64_t q_stride, float* out, int64_t out_stride) override {
    return CudaStatus(cuda::LaunchPagedAttention(Native(s), shape, p, b, q, q_stride, out, out_stride),
                      "paged_attention");
  }
  Status RunKvIntegrityCheck(Stream& s, const KvIntegrityBatch& batch, int32_t* result) override {
    return CudaStatus(cuda::LaunchKvIntegrityCheck(Native(s), batch, result), "kv_integrity_check");
  }
  Status RunTopK(Stream& s, const float* logits, int64_t n_rows, int64_t n_vocab, int k, float* values,
                 int32_t* ids) override {
    return CudaStatus(cuda::LaunchTopK(Native(s), logits, n_rows, n_vocab, k, values, ids), "top_k");
  }

 private:
  int ordinal_;
  cudaDeviceProp prop_;
  CudaStream stream_;
};

}  // namespace

Result<std::unique_ptr<Backend>> MakeCudaBackend(int ordinal) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return FailedPrecondition(std::string("no CUDA device: ") + cudaGetErrorString(err));
  if (count == 0) return FailedPrecondition("no CUDA device: the CUDA runtime found none");
  if (ordinal < 0 || ordinal >= count) {
    return NotFound("CUDA device " + std::to_string(ordinal) + " not present: " + std::to_string(count) +
                    " device(s)");
  }
  cudaDeviceProp prop{};
  PAGODA_RETURN_IF_ERROR(CudaStatus(cudaGetDeviceProperties(&prop, ordinal), "device properties"));
  // The kernels are built for sm_90a alone (machine code, no PTX for other chips).
  if (prop.major != 9 || prop.minor != 0) {
    return FailedPrecondition("CUDA device " + std::to_string(ordinal) + " (" + prop.name + ", sm_" +
                              std::to_string(prop.major) + std::to_string(prop.minor) +
                              ") is not supported: this build has kernels for sm_90a (H100/H200) only");
  }
  PAGODA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(ordinal), "set device"));
  cudaStream_t stream = nullptr;
  PAGODA_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "create stream"));
  return std::unique_ptr<Backend>(new CudaBackend(ordinal, prop, stream));
}

}  // namespace pagoda::kernels
