#include "model/layers/phased_weight.h"

#include "base/check.h"
#include "kernels/cpu/matmul.h"

namespace pagoda {

void PhasedMatMul(const PhasedWeight& w, const float* x, std::span<const PhaseRun> runs, float* y,
                  ThreadPool& pool) {
  const int64_t n_in = w.prefill().ne[0];
  const int64_t n_out = w.n_out();
  for (const PhaseRun& r : runs) {
    kernels::MatMul(w[r.phase], x + r.begin * n_in, r.n, y + r.begin * n_out, pool);
  }
}

void PhasedMatMulShared(std::span<const PhasedTarget> targets, const float* x,
                        std::span<const PhaseRun> runs, ThreadPool& pool) {
  PAGODA_CHECK(targets.size() <= static_cast<size_t>(kernels::kMaxMatMulTargets));
  if (targets.empty()) return;
  const int64_t n_in = targets[0].w->prefill().ne[0];
  kernels::MatMulTarget t[kernels::kMaxMatMulTargets];
  for (const PhaseRun& r : runs) {
    for (size_t i = 0; i < targets.size(); ++i) {
      t[i].w = &(*targets[i].w)[r.phase];
      t[i].y = targets[i].y + r.begin * targets[i].w->n_out();
    }
    kernels::MatMulShared(std::span<const kernels::MatMulTarget>(t, targets.size()), x + r.begin * n_in, r.n,
                          pool);
  }
}

int SplitPhaseRuns(const uint8_t* decode, int64_t n, bool merge, PhaseRun* out) {
  if (n <= 0) return 0;
  if (merge || decode == nullptr) {
    out[0] = PhaseRun{0, n, Phase::kPrefill};
    return 1;
  }
  int count = 0;
  for (int64_t t = 0; t < n; ++t) {
    const Phase p = decode[t] ? Phase::kDecode : Phase::kPrefill;
    if (count > 0 && out[count - 1].phase == p) {
      ++out[count - 1].n;
    } else {
      out[count++] = PhaseRun{t, 1, p};
    }
  }
  return count;
}

}  // namespace pagoda
