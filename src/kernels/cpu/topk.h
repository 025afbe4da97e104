// Top-k over rows of logits (the sampling-side reduction a device backend
// runs next to the logits; argmax is k = 1), scalar. The order it defines is
// the contract of Backend::TopK: larger value first, ties to the smaller id,
// NaN never chosen, unfilled slots (-inf, -1). Pure; any thread.
#pragma once

#include <cstdint>

namespace pagoda::kernels {

// logits: [n_rows, n_vocab]; values, ids: [n_rows, k].
void TopK(const float* logits, int64_t n_rows, int64_t n_vocab, int k, float* values, int32_t* ids);

}  // namespace pagoda::kernels
