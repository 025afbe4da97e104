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

bool CanPackWeight(const TensorView& t) {
  return ActiveIsa() == Isa::kAvx512 && t.data != nullptr && t.n_dims <= 2 &&
         internal::Avx512PackedBytes(t.type, t.rows(), t.ne[0]) > 0;
}

PackedWeightStore::PackedWeightStore(ThreadPool& pool) : pool_(pool) {}
PackedWeightStore::~PackedWeightStore() = default;

Result<TensorView> PackedWeightStore::Add(const TensorView& t) {
  if (!CanPackWeight(t)) return t;
  TensorView view = t;
  for (const auto& b : buffers_) {
    if (b->source == t.data) {
      view.packed = b->data.get();
      return view;
    }
  }
  PAGODA_RETURN_IF_ERROR(CheckMatMulWeight(t));
  const int64_t n_in = t.ne[0], n_rows = t.rows();
  const int64_t bytes = internal::Avx512PackedBytes(t.type, n_rows, n_in);
  auto buf = std::make_unique<Buffer>();
  buf->source = t.data;
  buf->data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64))));
  if (!buf->data) return ResourceExhausted("out of memory packing weight '" + t.name + "'");
  const int64_t n_groups = (n_rows + 15) / 16;
  const int64_t group_bytes = internal::Avx512PackedRowStride(t.type, n_in) * 16;
  const auto* src = static_cast<const uint8_t*>(t.data);
  const int64_t ws = t.row_bytes();
  uint8_t* dst = buf->data.get();
  pool_.Run([&](int ith, int nth) {
    for (int64_t g = ith; g < n_groups; g += nth) {
      const int64_t r0 = 16 * g;
      internal::Avx512PackRows(t.type, src + r0 * ws, ws, std::min<int64_t>(16, n_rows - r0), n_in,
                               dst + g * group_bytes);
    }
  });
  view.packed = buf->data.get();
  bytes_ += bytes;
  buffers_.push_back(std::move(buf));
  return view;
}

}  // namespace pagoda::kernels
