#include "kernels/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "kernels/cpu/kv_integrity.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/topk.h"
#include "tensor/tensor_view.h"

namespace pagoda::kernels {
namespace {

constexpr size_t kAlign = 256;

class CpuStream final : public Stream {
 public:
  Status Synchronize() override { return Status::Ok(); }
};

// Element offset of (block, slot) in one of a pool's K/V arrays.
int64_t SlotElement(const KvPoolView& p, int32_t block, int32_t slot, int head_dim) {
  return (static_cast<int64_t>(block) * p.block_size + slot) * p.n_head_kv * head_dim;
}

uint8_t* Bytes(void* p) { return static_cast<uint8_t*>(p); }

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(ThreadPool& pool) : pool_(pool) {}

  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string name() const override { return "cpu (" + std::to_string(pool_.size()) + " threads)"; }

  Result<DeviceBuffer> Allocate(int64_t bytes) override {
    if (bytes <= 0) return InvalidArgument("Allocate: size must be positive");
    const size_t rounded = (static_cast<size_t>(bytes) + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded);
    if (p == nullptr) return ResourceExhausted("cpu: cannot allocate " + std::to_string(bytes) + " bytes");
    return DeviceBuffer(p, bytes, this);
  }
  void Free(void* data) noexcept override { std::free(data); }

  Stream& default_stream() override { return stream_; }
  Result<std::unique_ptr<Stream>> CreateStream() override { return std::unique_ptr<Stream>(new CpuStream()); }

  Status CopyToDevice(Stream&, const void* host, void* device, int64_t bytes) override {
    std::memcpy(device, host, static_cast<size_t>(bytes));
    return Status::Ok();
  }
  Status CopyToHost(Stream&, const void* device, void* host, int64_t bytes) override {
    std::memcpy(host, device, static_cast<size_t>(bytes));
    return Status::Ok();
  }
  Status CopyOnDevice(Stream&, const void* src, void* dst, int64_t bytes) override {
    std::memmove(dst, src, static_cast<size_t>(bytes));
    return Status::Ok();
  }

  bool SupportsMatMul(DType type) const override {
    const auto info = LookupDType(static_cast<uint32_t>(type));
    return info && info->weights_supported;
  }

 protected:
  Status CheckMatrix(const DeviceMatrix& w) const override { return CheckMatMulWeight(View(w)); }

  Status RunMatMul(Stream&, const DeviceMatrix& w, const float* x, int64_t n_tokens, float* y) override {
    kernels::MatMul(View(w), x, n_tokens, y, pool_);
    return Status::Ok();
  }
  Status RunRmsNorm(Stream&, const float* x, const float* w, float eps, int64_t n_rows, int64_t n,
                    float* y) override {
    kernels::RmsNorm(x, w, eps, n_rows, n, y);
    return Status::Ok();
  }
  Status RunRopeTables(Stream&, const double* inv_freq, int n_half, const int32_t* positions, int64_t n_tokens,
                       float* cos, float* sin) override {
    kernels::RopeTables(inv_freq, n_half, positions, n_tokens, cos, sin);
    return Status::Ok();
  }
  Status RunRope(Stream&, float* x, int64_t n_tokens, int64_t row_stride, int n_heads, int head_dim, int n_rot,
                 bool neox, const float* cos, const float* sin) override {
    kernels::Rope(x, n_tokens, row_stride, n_heads, head_dim, n_rot, neox, cos, sin);
    return Status::Ok();
  }
  Status RunSoftmax(Stream&, float* x, int64_t n_rows, int64_t n) override {
    for (int64_t r = 0; r < n_rows; ++r) kernels::Softmax(x + r * n, n);
    return Status::Ok();
  }
  Status RunSiluMul(Stream&, const float* gate, const float* up, int64_t n, float* out) override {
    kernels::SiluMul(gate, up, n, out);
    return Status::Ok();
  }
  Status RunAdd(Stream&, const float* a, const float* b, int64_t n, float* out) override {
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
    return Status::Ok();
  }
  Status RunStoreKv(Stream&, const KvPoolView& p, const PagedBatch& b, const float* k, int64_t k_stride,
                    const float* v, int64_t v_stride) override;
  Status RunPagedAttention(Stream&, const AttentionShape& shape, const KvPoolView& p, const PagedBatch& b,
                           const float* q, int64_t q_stride, float* out, int64_t out_stride) override;
  Status RunKvIntegrityCheck(Stream&, const KvIntegrityBatch& batch, int32_t* result) override {
    kernels::KvIntegrityCheck(batch, result);
    return Status::Ok();
  }
  Status RunTopK(Stream&, const float* logits, int64_t n_rows, int64_t n_vocab, int k, float* values,
                 int32_t* ids) override {
    kernels::TopK(logits, n_rows, n_vocab, k, values, ids);
    return Status::Ok();
  }

 private:
  static TensorView View(const DeviceMatrix& w) {
    TensorView v;
    v.name = "device matrix";
    v.type = w.type;
    v.n_dims = 2;
    v.ne = {w.n_in, w.n_out, 1, 1};
    v.data = w.data;
    return v;
  }
  // Writes one position's row of K or V (n_head_kv heads of head_dim) into the pool.
  static void StoreRow(const KvPoolView& p, void* base, uint8_t* scales, int head_dim, int32_t block, int32_t slot,
                       const float* src);

  ThreadPool& pool_;
  CpuStream stream_;
};

void CpuBackend::StoreRow(const KvPoolView& p, void* base, uint8_t* scales, int head_dim, int32_t block,
                          int32_t slot, const float* src) {
  uint8_t* dst = Bytes(base) + SlotElement(p, block, slot, head_dim) * KvTypeSize(p.type);
  if (!KvTypeHasScales(p.type)) {
    StoreKvRow(src, static_cast<int64_t>(p.n_head_kv) * head_dim, p.type, dst);
    return;
  }
  uint8_t* sc = scales + static_cast<int64_t>(block) * p.n_head_kv * p.block_size + slot;
  StoreKvRowQuantized(src, p.n_head_kv, head_dim, p.type, dst, sc, p.block_size);
}

Status CpuBackend::RunStoreKv(Stream&, const KvPoolView& p, const PagedBatch& b, const float* k, int64_t k_stride,
                              const float* v, int64_t v_stride) {
  for (int64_t r = 0; r < b.n_rows; ++r) {
    const int32_t pos = b.positions[r];
    const int32_t block = b.block_tables[static_cast<int64_t>(b.row_seq[r]) * b.max_blocks + pos / p.block_size];
    PAGODA_CHECK(block >= 0 && block < p.n_blocks) << "StoreKv: block " << block << " of row " << r;
    StoreRow(p, p.k, p.k_scales, p.head_dim_k, block, pos % p.block_size, k + r * k_stride);
    StoreRow(p, p.v, p.v_scales, p.head_dim_v, block, pos % p.block_size, v + r * v_stride);
  }
  return Status::Ok();
}

Status CpuBackend::RunPagedAttention(Stream&, const AttentionShape& shape, const KvPoolView& p, const PagedBatch& b,
                                     const float* q, int64_t q_stride, float* out, int64_t out_stride) {
  // Rows grouped by sequence, and each sequence's blocks as the KvView
  // pointer lists the CPU attention kernel reads.
  std::vector<std::vector<int32_t>> rows(b.n_seqs);
  std::vector<int32_t> n_needed(b.n_seqs, 0);
  for (int64_t r = 0; r < b.n_rows; ++r) {
    const int32_t s = b.row_seq[r];
    PAGODA_CHECK(s >= 0 && s < b.n_seqs && b.positions[r] >= 0) << "PagedAttention: row " << r;
    rows[s].push_back(static_cast<int32_t>(r));
    n_needed[s] = std::max(n_needed[s], b.positions[r] / p.block_size + 1);
  }
  const int64_t k_block_bytes = SlotElement(p, 1, 0, p.head_dim_k) * KvTypeSize(p.type);
  const int64_t v_block_bytes = SlotElement(p, 1, 0, p.head_dim_v) * KvTypeSize(p.type);
  const int64_t scale_block = static_cast<int64_t>(p.n_head_kv) * p.block_size;
  std::vector<std::vector<const void*>> kb(b.n_seqs), vb(b.n_seqs);
  std::vector<std::vector<const uint8_t*>> ks(b.n_seqs), vs(b.n_seqs);
  std::vector<AttentionSeq> seqs;
  for (int32_t s = 0; s < b.n_seqs; ++s) {
    if (rows[s].empty()) continue;
    PAGODA_CHECK(n_needed[s] <= b.max_blocks) << "PagedAttention: sequence " << s << " past its block table";
    for (int32_t i = 0; i < n_needed[s]; ++i) {
      const int32_t id = b.block_tables[static_cast<int64_t>(s) * b.max_blocks + i];
      PAGODA_CHECK(id >= 0 && id < p.n_blocks) << "PagedAttention: block " << id;
      kb[s].push_back(Bytes(p.k) + id * k_block_bytes);
      vb[s].push_back(Bytes(p.v) + id * v_block_bytes);
      if (KvTypeHasScales(p.type)) {
        ks[s].push_back(p.k_scales + id * scale_block);
        vs[s].push_back(p.v_scales + id * scale_block);
      }
    }
    AttentionSeq seq;
    seq.kv.type = p.type;
    seq.kv.k_blocks = kb[s].data();
    seq.kv.v_blocks = vb[s].data();
    seq.kv.block_size = p.block_size;
    seq.kv.k_pos_stride = static_cast<int64_t>(p.n_head_kv) * p.head_dim_k;
    seq.kv.k_head_stride = p.head_dim_k;
    seq.kv.v_pos_stride = static_cast<int64_t>(p.n_head_kv) * p.head_dim_v;
    seq.kv.v_head_stride = p.head_dim_v;
    if (KvTypeHasScales(p.type)) {
      seq.kv.k_scales = ks[s].data();
      seq.kv.v_scales = vs[s].data();
    }
    seq.rows = rows[s].data();
    seq.n_rows = static_cast<int32_t>(rows[s].size());
    seqs.push_back(seq);
  }
  Attention(shape, q, q_stride, b.positions, seqs.data(), static_cast<int>(seqs.size()), out, out_stride, pool_);
  return Status::Ok();
}

}  // namespace

std::unique_ptr<Backend> MakeCpuBackend(ThreadPool& pool) { return std::make_unique<CpuBackend>(pool); }

}  // namespace pagoda::kernels
