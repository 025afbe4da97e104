// DecodeWeightStore: owns the decode-phase copies of a model's linear weights
// (--decode-weights q4_0|q4_k). At load, each linear weight of the checkpoint
// (Q8_0, F16, BF16 or F32) is dequantized row by row and requantized into
// the decode type with ggml's reference rounding (kernels/cpu/
// quantize_weights.h), rows shared out over the model's ThreadPool. The
// checkpoint's tensors stay as they are for prefill tokens. Built during
// model load (one thread), read-only afterwards; owned by the model.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "tensor/dtype.h"
#include "tensor/tensor_view.h"

namespace pagoda {

// What a decode copy cost, for the start-up message and /metrics.
struct DecodeWeightsInfo {
  std::optional<DType> type;  // nullopt: decode tokens use the checkpoint's weights
  int64_t n_tensors = 0;     // decode copies made
  int64_t n_kept = 0;        // matrices whose rows are not whole blocks: decode uses the checkpoint's
  int64_t bytes = 0;          // extra memory held by the copies
  int64_t source_bytes = 0;   // bytes of the checkpoint tensors they replace for decode
  double seconds = 0;         // time spent quantizing at load
};

// The types --decode-weights accepts (Q4_0, Q4_K) and the checkpoint types a
// copy can be made from (Q8_0, F16, BF16, F32: more than 4 bits per weight).
bool IsDecodeWeightType(DType t);
bool CanSupplyDecodeWeights(DType source);
// "q4_0" | "q4_k" -> type; a clear error for anything else.
Result<DType> ParseDecodeWeightType(const std::string& name);

class DecodeWeightStore {
 public:
  DecodeWeightStore(DType type, ThreadPool& pool);
  ~DecodeWeightStore();
  DecodeWeightStore(const DecodeWeightStore&) = delete;
  DecodeWeightStore& operator=(const DecodeWeightStore&) = delete;

  DType type() const { return info_.type.value(); }
  // Quantizes a copy of `src` ([n_in, n_out] matrix) into the decode type and
  // returns a view of it (valid as long as the store). Rows that are not
  // whole blocks: Q4_K falls back to Q4_0; if that does not fit either, src
  // itself is returned (counted in n_kept). Error naming the tensor when its
  // type cannot supply a copy (4-6 bit sources).
  Result<TensorView> Add(const TensorView& src);
  const DecodeWeightsInfo& info() const { return info_; }

 private:
  struct Buffer;
  ThreadPool& pool_;
  DecodeWeightsInfo info_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
};

}  // namespace pagoda
