#include "sampling/fast_exp.h"

#include <algorithm>

#include "base/check.h"

namespace pagoda {

float ChunkSum(const float* w, size_t n) {
  float acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += w[i + j];
  }
  for (; i < n; ++i) acc[0] += w[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

double ExpTerms(std::span<const float> x, float shift, float scale, float* out) {
  float local[kExpChunk];
  double sum = 0.0;
  for (size_t c = 0; c < x.size(); c += kExpChunk) {
    const size_t n = std::min(kExpChunk, x.size() - c);
    float* w = out ? out + c : local;
    const float* xc = x.data() + c;
    for (size_t i = 0; i < n; ++i) w[i] = FastExp((xc[i] - shift) * scale);  // vectorised
    sum += ChunkSum(w, n);
  }
  return sum;
}

size_t DrawIndex(std::span<const float> w, double u) {
  double cum = 0.0;
  for (size_t c = 0; c < w.size(); c += kExpChunk) {
    const size_t n = std::min(kExpChunk, w.size() - c);
    const double chunk = ChunkSum(w.data() + c, n);
    if (cum + chunk > u) {
      for (size_t i = c; i < c + n; ++i) {
        cum += w[i];
        if (u < cum) return i;
      }
      // Float chunk sum vs double running sum: at most a rounding apart.
      for (size_t i = c + n; i-- > c;) {
        if (w[i] > 0.0f) return i;
      }
    }
    cum += chunk;
  }
  for (size_t i = w.size(); i-- > 0;) {
    if (w[i] > 0.0f) return i;
  }
  PAGODA_CHECK(false) << "DrawIndex over all-zero weights";
  return 0;
}

}  // namespace pagoda
