#include "kernels/backend.h"

#include <string>

#include "kernels/cpu/cpu_backend.h"
#include "tensor/dtype.h"
#if PAGODA_HAVE_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace pagoda::kernels {
namespace {

Status Positive(int64_t v, const char* what) {
  if (v <= 0) return InvalidArgument(std::string(what) + " must be positive, got " + std::to_string(v));
  return Status::Ok();
}

Status NotNull(const void* p, const char* what) {
  if (p == nullptr) return InvalidArgument(std::string(what) + " is null");
  return Status::Ok();
}

Status CheckPool(const KvPoolView& p) {
  PAGODA_RETURN_IF_ERROR(Positive(p.n_blocks, "KV pool blocks"));
  PAGODA_RETURN_IF_ERROR(Positive(p.block_size, "KV block size"));
  PAGODA_RETURN_IF_ERROR(Positive(p.n_head_kv, "KV heads"));
  PAGODA_RETURN_IF_ERROR(NotNull(p.k, "KV pool K"));
  PAGODA_RETURN_IF_ERROR(NotNull(p.v, "KV pool V"));
  if (p.head_dim_k <= 0 || p.head_dim_k > kMaxDeviceHeadDim || p.head_dim_v <= 0 ||
      p.head_dim_v > kMaxDeviceHeadDim) {
    return InvalidArgument("KV head dims " + std::to_string(p.head_dim_k) + "/" + std::to_string(p.head_dim_v) +
                           " outside 1.." + std::to_string(kMaxDeviceHeadDim));
  }
  if (KvTypeHasScales(p.type) && (p.k_scales == nullptr || p.v_scales == nullptr)) {
    return InvalidArgument(std::string("KV pool of type ") + KvTypeName(p.type) + " needs scale arrays");
  }
  return Status::Ok();
}

Status CheckBatch(const PagedBatch& b) {
  PAGODA_RETURN_IF_ERROR(Positive(b.n_rows, "batch rows"));
  PAGODA_RETURN_IF_ERROR(Positive(b.n_seqs, "batch sequences"));
  PAGODA_RETURN_IF_ERROR(Positive(b.max_blocks, "blocks per sequence"));
  PAGODA_RETURN_IF_ERROR(NotNull(b.positions, "positions"));
  PAGODA_RETURN_IF_ERROR(NotNull(b.row_seq, "row_seq"));
  return NotNull(b.block_tables, "block tables");
}

Status CheckStride(int64_t stride, int64_t width, const char* what) {
  if (stride < width) {
    return InvalidArgument(std::string(what) + " row stride " + std::to_string(stride) + " < width " +
                           std::to_string(width));
  }
  return Status::Ok();
}

}  // namespace

Status Backend::MatMul(Stream& s, const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y) {
  PAGODA_RETURN_IF_ERROR(Positive(n_tokens, "n_tokens"));
  PAGODA_RETURN_IF_ERROR(Positive(w.n_in, "matrix columns"));
  PAGODA_RETURN_IF_ERROR(Positive(w.n_out, "matrix rows"));
  if (w.data == nullptr || x == nullptr || y == nullptr) return InvalidArgument("MatMul: null operand");
  if (!SupportsMatMul(w.type)) {
    return Unimplemented(std::string("MatMul on ") + name() + ": weight type " + DTypeName(w.type) +
                         " not supported");
  }
  const DTypeInfo& info = GetDTypeInfo(w.type);
  if (w.n_in % info.block_size != 0) {
    return InvalidArgument("MatMul: row length " + std::to_string(w.n_in) + " is not a multiple of the " +
                           info.name + " block size " + std::to_string(info.block_size));
  }
  PAGODA_RETURN_IF_ERROR(CheckMatrix(w));
  return RunMatMul(s, w, x, n_tokens, y);
}

Status Backend::RmsNorm(Stream& s, const float* x, const float* w, float eps, int64_t n_rows, int64_t n, float* y) {
  PAGODA_RETURN_IF_ERROR(Positive(n_rows, "rows"));
  PAGODA_RETURN_IF_ERROR(Positive(n, "row width"));
  if (x == nullptr || y == nullptr) return InvalidArgument("RmsNorm: null operand");
  return RunRmsNorm(s, x, w, eps, n_rows, n, y);
}

Status Backend::RopeTables(Stream& s, const double* inv_freq, int n_half, const int32_t* positions, int64_t n_tokens,
                           float* cos, float* sin) {
  PAGODA_RETURN_IF_ERROR(Positive(n_half, "n_rot / 2"));
  PAGODA_RETURN_IF_ERROR(Positive(n_tokens, "n_tokens"));
  if (inv_freq == nullptr || positions == nullptr || cos == nullptr || sin == nullptr) {
    return InvalidArgument("RopeTables: null operand");
  }
  return RunRopeTables(s, inv_freq, n_half, positions, n_tokens, cos, sin);
}

Status Backend::Rope(Stream& s, float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim, int n_rot,
                     bool neox, const float* cos, const float* sin) {
  PAGODA_RETURN_IF_ERROR(Positive(n_tokens, "n_tokens"));
  PAGODA_RETURN_IF_ERROR(Positive(n_heads, "heads"));
  if (n_rot <= 0 || n_rot % 2 != 0 || n_rot > head_dim) {
    return InvalidArgument("Rope: n_rot " + std::to_string(n_rot) + " must be even and in 2.." +
                           std::to_string(head_dim));
  }
  PAGODA_RETURN_IF_ERROR(CheckStride(row_stride, static_cast<int64_t>(n_heads) * head_dim, "Rope"));
  if (x == nullptr || cos == nullptr || sin == nullptr) return InvalidArgument("Rope: null operand");
  return RunRope(s, x, n_tokens, row_stride, n_heads, head_dim, n_rot, neox, cos, sin);
}

Status Backend::Softmax(Stream& s, float* x, int64_t n_rows, int64_t n) {
  PAGODA_RETURN_IF_ERROR(Positive(n_rows, "rows"));
  PAGODA_RETURN_IF_ERROR(Positive(n, "row width"));
  PAGODA_RETURN_IF_ERROR(NotNull(x, "Softmax input"));
  return RunSoftmax(s, x, n_rows, n);
}

Status Backend::SiluMul(Stream& s, const float* gate, const float* up, int64_t n, float* out) {
  PAGODA_RETURN_IF_ERROR(Positive(n, "n"));
  if (gate == nullptr || up == nullptr || out == nullptr) return InvalidArgument("SiluMul: null operand");
  return RunSiluMul(s, gate, up, n, out);
}

Status Backend::Add(Stream& s, const float* a, const float* b, int64_t n, float* out) {
  PAGODA_RETURN_IF_ERROR(Positive(n, "n"));
  if (a == nullptr || b == nullptr || out == nullptr) return InvalidArgument("Add: null operand");
  return RunAdd(s, a, b, n, out);
}

Status Backend::StoreKv(Stream& s, const KvPoolView& pool, const PagedBatch& batch, const float* k, int64_t k_stride,
                        const float* v, int64_t v_stride) {
  PAGODA_RETURN_IF_ERROR(CheckPool(pool));
  PAGODA_RETURN_IF_ERROR(CheckBatch(batch));
  if (k == nullptr || v == nullptr) return InvalidArgument("StoreKv: null K or V");
  PAGODA_RETURN_IF_ERROR(CheckStride(k_stride, static_cast<int64_t>(pool.n_head_kv) * pool.head_dim_k, "K"));
  PAGODA_RETURN_IF_ERROR(CheckStride(v_stride, static_cast<int64_t>(pool.n_head_kv) * pool.head_dim_v, "V"));
  return RunStoreKv(s, pool, batch, k, k_stride, v, v_stride);
}

Status Backend::PagedAttention(Stream& s, const AttentionShape& shape, const KvPoolView& pool, const PagedBatch& batch,
                               const float* q, int64_t q_stride, float* out, int64_t out_stride) {
  PAGODA_RETURN_IF_ERROR(CheckPool(pool));
  PAGODA_RETURN_IF_ERROR(CheckBatch(batch));
  if (shape.n_head <= 0 || shape.n_head_kv != pool.n_head_kv || shape.n_head % shape.n_head_kv != 0 ||
      shape.head_dim_k != pool.head_dim_k || shape.head_dim_v != pool.head_dim_v) {
    return InvalidArgument("PagedAttention: shape (" + std::to_string(shape.n_head) + " heads, " +
                           std::to_string(shape.n_head_kv) + " KV heads, dims " + std::to_string(shape.head_dim_k) +
                           "/" + std::to_string(shape.head_dim_v) + ") does not fit the KV pool");
  }
  if (q == nullptr || out == nullptr) return InvalidArgument("PagedAttention: null q or out");
  PAGODA_RETURN_IF_ERROR(CheckStride(q_stride, static_cast<int64_t>(shape.n_head) * shape.head_dim_k, "q"));
  PAGODA_RETURN_IF_ERROR(CheckStride(out_stride, static_cast<int64_t>(shape.n_head) * shape.head_dim_v, "out"));
  return RunPagedAttention(s, shape, pool, batch, q, q_stride, out, out_stride);
}

Status Backend::KvIntegrityCheck(Stream& s, const KvIntegrityBatch& b, int32_t* result) {
  PAGODA_RETURN_IF_ERROR(Positive(b.n_seqs, "sequences"));
  PAGODA_RETURN_IF_ERROR(Positive(b.n_blocks, "pool blocks"));
  if (b.recorded_offsets == nullptr || b.live_offsets == nullptr || b.pool_tags == nullptr ||
      b.pool_refs == nullptr || result == nullptr) {
    return InvalidArgument("KvIntegrityCheck: null operand");
  }
  return RunKvIntegrityCheck(s, b, result);
}

Status Backend::TopK(Stream& s, const float* logits, int64_t n_rows, int64_t n_vocab, int k, float* values,
                     int32_t* ids) {
  PAGODA_RETURN_IF_ERROR(Positive(n_rows, "rows"));
  PAGODA_RETURN_IF_ERROR(Positive(n_vocab, "vocabulary size"));
  if (k < 1 || k > kMaxTopK) {
    return InvalidArgument("TopK: k " + std::to_string(k) + " outside 1.." + std::to_string(kMaxTopK));
  }
  if (logits == nullptr || values == nullptr || ids == nullptr) return InvalidArgument("TopK: null operand");
  return RunTopK(s, logits, n_rows, n_vocab, k, values, ids);
}

Result<std::unique_ptr<Backend>> MakeBackend(const DeviceSpec& spec, ThreadPool& pool) {
  if (spec.kind == DeviceKind::kCpu) return MakeCpuBackend(pool);
#if PAGODA_HAVE_CUDA
  return MakeCudaBackend(spec.ordinal);
#else
  return Unimplemented("this build has no CUDA support (" + DeviceSpecName(spec) +
                       "); rebuild with the CUDA toolkit and -DPAGODA_CUDA=ON");
#endif
}

}  // namespace pagoda::kernels
