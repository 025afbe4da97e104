#include "kernels/cpu/packed_weights.h"

#include <cstdlib>
#include <cstring>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_internal.h"

namespace pagoda::kernels {

struct PackedWeightStore::Buffer {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  const void* source = nullptr;
  std::unique_ptr<uint8_t, Free> data;
};

bool WeightPackingEnabled() {
  const char* env = std::getenv("PAGODA_PACK_WEIGHTS");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

namespace {

// The active ISA's packed layout: rows per group, bytes, and the packing.
struct Layout {
  int64_t group_rows = 0;  // 0: none
  int64_t (*bytes)(DType, int64_t, int64_t) = nullptr;
  void (*pack)(DType, const uint8_t*, int64_t, int64_t, int64_t, uint8_t*) = nullptr;
};

Layout ActiveLayout() {
  switch (ActiveIsa()) {
    case Isa::kAvx512: return {16, internal::Avx512PackedBytes, internal::Avx512PackRows};
    case Isa::kAvx2: return {8, internal::Avx2PackedBytes, internal::Avx2PackRows};
    default: return {};
  }
}

}  // namespace

bool CanPackWeight(const TensorView& t) {
  const Layout l = ActiveLayout();
  return l.group_rows > 0 && t.data != nullptr && t.n_dims <= 2 && l.bytes(t.type, t.rows(), t.ne[0]) > 0;
}

PackedWeightStore::PackedWeightStore(ThreadPool& pool) : pool_(pool) {}
PackedWeightStore::~PackedWeightStore() = default;

Result<TensorView> PackedWeightStore::Add(const TensorView& t) {
  if (!CanPackWeight(t)) return t;
  const Layout layout = ActiveLayout();
  TensorView view = t;
  view.packed_isa = static_cast<int>(ActiveIsa());
  for (const auto& b : buffers_) {
    if (b->source == t.data) {
      view.packed = b->data.get();
      return view;
    }
  }
  PAGODA_RETURN_IF_ERROR(CheckMatMulWeight(t));
  const int64_t n_in = t.ne[0], n_rows = t.rows();
  const int64_t bytes = layout.bytes(t.type, n_rows, n_in);
  auto buf = std::make_unique<Buffer>();
  buf->source = t.data;
  buf->data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64))));
  if (!buf->data) return ResourceExhausted("out of memory packing weight '" + t.name + "'");
  const int64_t gr = layout.group_rows;
  const int64_t n_groups = (n_rows + gr - 1) / gr;
  const int64_t group_bytes = bytes / n_groups;
  const auto* src = static_cast<const uint8_t*>(t.data);
  const int64_t ws = t.row_bytes();
  uint8_t* dst = buf->data.get();
  pool_.Run([&](int ith, int nth) {
    for (int64_t g = ith; g < n_groups; g += nth) {
      const int64_t r0 = gr * g;
      layout.pack(t.type, src + r0 * ws, ws, std::min<int64_t>(gr, n_rows - r0), n_in, dst + g * group_bytes);
    }
  });
  view.packed = buf->data.get();
  bytes_ += bytes;
  buffers_.push_back(std::move(buf));
  return view;
}

}  // namespace pagoda::kernels
