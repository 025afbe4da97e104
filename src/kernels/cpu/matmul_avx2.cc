// AVX2 + FMA MatMul path (placeholder until the kernels land).
#include "kernels/cpu/matmul_internal.h"

namespace pagoda::kernels::internal {

const Plan* Avx2Plan(DType type, int64_t n_tokens) { return nullptr; }

}  // namespace pagoda::kernels::internal
