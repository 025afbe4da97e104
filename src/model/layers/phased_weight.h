// Per-phase weight precision (--decode-weights): a micro-batch's tokens are
// prefill tokens (prompt chunks, recomputation) or decode tokens (the one new
// token of a generating sequence). Every linear weight is a PhasedWeight, the
// tensor each phase multiplies with: the checkpoint's own tensor for prefill
// and, with decode weights on, a lower-precision copy for decode (otherwise
// the same view). The model splits the micro-batch into PhaseRuns, maximal
// runs of consecutive rows of one phase, and every linear layer multiplies
// each run with its phase's tensor; attention, norms and everything else stay
// shared. An MoE layer keeps one PhasedWeight per expert and uses the same
// runs. Views only: the tensors live in the GGUF mmap or a DecodeWeightStore.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "tensor/tensor_view.h"

namespace pagoda {

enum class Phase : uint8_t { kPrefill = 0, kDecode = 1 };
inline constexpr int kPhaseCount = 2;

// Rows [begin, begin + n) of the micro-batch, all of one phase.
struct PhaseRun {
  int64_t begin = 0;
  int64_t n = 0;
  Phase phase = Phase::kPrefill;
};

struct PhasedWeight {
  std::array<TensorView, kPhaseCount> by_phase;

  const TensorView& operator[](Phase p) const { return by_phase[static_cast<int>(p)]; }
  const TensorView& prefill() const { return by_phase[0]; }
  int64_t n_out() const { return by_phase[0].ne[1]; }
  // The same tensor for both phases.
  static PhasedWeight Shared(const TensorView& t) { return PhasedWeight{{t, t}}; }
};

// y = x * W^T row by row, each run through its phase's tensor.
//   x: [n_tokens, n_in], y: [n_tokens, n_out]; runs cover the rows used.
void PhasedMatMul(const PhasedWeight& w, const float* x, std::span<const PhaseRun> runs, float* y,
                  ThreadPool& pool);

// kernels::MatMulShared per run (weights that read the same x: Q/K/V, gate/up).
struct PhasedTarget {
  const PhasedWeight* w;
  float* y;
};
void PhasedMatMulShared(std::span<const PhasedTarget> targets, const float* x,
                        std::span<const PhaseRun> runs, ThreadPool& pool);

// Splits rows [0, n) into runs by decode flags (1 = decode; nullptr = all
// prefill). With merge set (no decode copy loaded) the result is one run.
// Writes at most n runs into out; returns how many.
int SplitPhaseRuns(const uint8_t* decode, int64_t n, bool merge, PhaseRun* out);

}  // namespace pagoda
