// Element-wise ops compiled with the AVX2 + FMA flags (ops_elementwise.h): the
// scalar definitions of ops_math.h, vectorized by the compiler 8 lanes wide.
#include "kernels/cpu/ops_elementwise.h"

#include "kernels/cpu/ops_math.h"

namespace pagoda::kernels::internal {

void SiluMulAvx2(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = SiluApprox(gate[i]) * up[i];
}

void GeluAvx2(const float* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = GeluApprox(x[i]);
}

}  // namespace pagoda::kernels::internal
