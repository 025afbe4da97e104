// Per-ISA twins of element-wise ops (internal to kernels/cpu): ops.cc picks
// one at run time by ActiveIsa(). Same formulas as ops_math.h; the compiler
// may fuse multiply-adds, so results can differ from the baseline in the last
// bits (never between calls of one process).
#pragma once

#include <cstdint>

namespace pagoda::kernels::internal {

// out[i] = silu(gate[i]) * up[i]. Call only when the ISA is available.
void SiluMulAvx512(const float* gate, const float* up, int64_t n, float* out);
void SiluMulAvx2(const float* gate, const float* up, int64_t n, float* out);

// out[i] = gelu(x[i]) (GeluApprox). Call only when the ISA is available.
void GeluAvx512(const float* x, int64_t n, float* out);
void GeluAvx2(const float* x, int64_t n, float* out);

}  // namespace pagoda::kernels::internal
