// PackedWeightStore: copies of weight matrices repacked once, at load, into
// the layout the active ISA's batched kernels read directly, so batched
// decode and prefill stop repacking every weight on every call. On AVX-512
// VNNI, Q4_0 matrices are stored in the int8 panel kernel's groups of 16 rows
// (matmul_int8_avx512.cc) and Q4_K as 16 rows interleaved by dword
// (matmul_int8_fused_avx512.cc; read below 64 tokens): the same bytes as the
// checkpoint's tensor (plus padding to whole groups). On AVX2, Q4_0, Q4_1 and Q8_0 are stored as the
// AVX2 int8 panel's groups of 8 rows (matmul_int8_avx2.cc; 1.1-1.2x the
// checkpoint's bytes), and Q4_K as the panel's level bytes with a compact
// scale record (matmul_int8_kquant_avx2.cc; 1.056x, read below 16 tokens,
// the checkpoint's rows from there). Either way the results are bitwise the per-call
// panel's. Other ISAs and types are left as they are. MatMul reads
// TensorView::packed when the active ISA (the one it was packed for,
// TensorView::packed_isa) and batch path can use it.
//
// Built during model load (one thread, packing shared out over the pool),
// read-only afterwards; owned by the model with the views that point into it.
// PAGODA_PACK_WEIGHTS=0 turns packing off (A/B runs).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "tensor/tensor_view.h"

namespace pagoda::kernels {

// Whether the active ISA has a packed layout for t (type, row length).
bool CanPackWeight(const TensorView& t);
// Whether load-time packing is on (PAGODA_PACK_WEIGHTS unset or not "0").
bool WeightPackingEnabled();

class PackedWeightStore {
 public:
  explicit PackedWeightStore(ThreadPool& pool);
  ~PackedWeightStore();
  PackedWeightStore(const PackedWeightStore&) = delete;
  PackedWeightStore& operator=(const PackedWeightStore&) = delete;

  // t with .packed pointing at a packed copy (valid as long as the store)
  // when CanPackWeight(t); t unchanged otherwise. A tensor already packed by
  // this store (same data pointer) shares its copy.
  Result<TensorView> Add(const TensorView& t);

  int64_t n_tensors() const { return static_cast<int64_t>(buffers_.size()); }
  int64_t bytes() const { return bytes_; }

 private:
  struct Buffer;
  ThreadPool& pool_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  int64_t bytes_ = 0;
};

}  // namespace pagoda::kernels
