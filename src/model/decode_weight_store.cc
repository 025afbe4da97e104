#include "model/decode_weight_store.h"

#include <chrono>
#include <cstdlib>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize_weights.h"

namespace pagoda {

struct DecodeWeightStore::Buffer {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data;
};

bool IsDecodeWeightType(DType t) { return t == DType::kQ4_0 || t == DType::kQ4_K; }

bool CanSupplyDecodeWeights(DType s) {
  return s == DType::kQ8_0 || s == DType::kF16 || s == DType::kBF16 || s == DType::kF32;
}

Result<DType> ParseDecodeWeightType(const std::string& name) {
  std::optional<DType> t = ParseDType(name);
  if (!t || !IsDecodeWeightType(*t)) {
    return InvalidArgument("unknown --decode-weights type '" + name + "' (expected q4_0 or q4_k)");
  }
  return *t;
}

DecodeWeightStore::DecodeWeightStore(DType type, ThreadPool& pool) : pool_(pool) {
  PAGODA_CHECK(IsDecodeWeightType(type));
  info_.type = type;
}

DecodeWeightStore::~DecodeWeightStore() = default;

Result<TensorView> DecodeWeightStore::Add(const TensorView& src) {
  DType type = this->type();
  // Rows that are not whole blocks (tiny models): Q4_K falls back to Q4_0,
  // and a matrix that fits neither keeps the checkpoint's tensor for decode.
  if (src.ne[0] % GetDTypeInfo(type).block_size != 0 && type == DType::kQ4_K) type = DType::kQ4_0;
  if (src.ne[0] % GetDTypeInfo(type).block_size != 0) {
    ++info_.n_kept;
    return src;
  }
  if (!CanSupplyDecodeWeights(src.type)) {
    return InvalidArgument("tensor '" + src.name + "' is " + DTypeName(src.type) + ": --decode-weights " +
                           DTypeName(type) +
                           " needs a checkpoint whose linear weights are Q8_0, F16, BF16 or F32 "
                           "(a 4-bit decode copy of a <= 6-bit tensor would only lose precision)");
  }
  const int64_t n_in = src.ne[0];
  const auto t0 = std::chrono::steady_clock::now();
  TensorView view = src;
  view.type = type;
  view.nbytes = src.rows() * RowBytes(type, n_in);
  auto buf = std::make_unique<Buffer>();
  const size_t alloc = static_cast<size_t>((view.nbytes + 63) / 64 * 64);
  buf->data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, alloc)));
  if (!buf->data) return ResourceExhausted("out of memory for the decode copy of '" + src.name + "'");
  PAGODA_RETURN_IF_ERROR(kernels::RequantizeTensor(src, type, buf->data.get(), pool_));
  view.data = buf->data.get();
  view.packed = nullptr;  // a packed copy of src is not a copy of this
  PAGODA_RETURN_IF_ERROR(kernels::CheckMatMulWeight(view));
  buffers_.push_back(std::move(buf));
  ++info_.n_tensors;
  info_.bytes += view.nbytes;
  info_.source_bytes += src.nbytes;
  info_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return view;
}

}  // namespace pagoda
