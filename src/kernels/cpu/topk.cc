#include "kernels/cpu/topk.h"

#include <limits>

namespace pagoda::kernels {
namespace {

// (a, ia) ranks before (b, ib); an empty slot (id < 0) ranks after every
// non-NaN entry, NaN after everything.
bool Before(float a, int32_t ia, float b, int32_t ib) {
  if (ia < 0 || a != a) return false;
  if (ib < 0) return true;
  return a > b || (a == b && ia < ib);
}

}  // namespace

void TopK(const float* logits, int64_t n_rows, int64_t n_vocab, int k, float* values, int32_t* ids) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* x = logits + r * n_vocab;
    float* val = values + r * k;
    int32_t* id = ids + r * k;
    for (int i = 0; i < k; ++i) {
      val[i] = -std::numeric_limits<float>::infinity();
      id[i] = -1;
    }
    // Insertion into the sorted list: k is small (<= kMaxTopK).
    for (int64_t j = 0; j < n_vocab; ++j) {
      const int32_t jj = static_cast<int32_t>(j);
      if (!Before(x[j], jj, val[k - 1], id[k - 1])) continue;
      int i = k - 1;
      while (i > 0 && Before(x[j], jj, val[i - 1], id[i - 1])) {
        val[i] = val[i - 1];
        id[i] = id[i - 1];
        --i;
      }
      val[i] = x[j];
      id[i] = jj;
    }
  }
}

}  // namespace pagoda::kernels
