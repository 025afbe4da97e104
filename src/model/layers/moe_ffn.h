// MoeFfn: a mixture-of-experts SwiGLU feed-forward layer.
//   p = softmax | sigmoid(W_router x)            [n_expert]
//   chosen = top-k of p + bias (bias only for choosing: DeepSeek-V3's
//            exp_probs_b), within the best groups when routing is group-limited
//   w_i = p[chosen_i], renormalised and scaled as the model defines
//   out = sum_i w_i * down_i(silu(gate_i x) * up_i x)  (+ shared expert)
// The micro-batch's (token, expert) pairs are grouped by expert, so each
// selected expert's weights are read once per step for all of its tokens.
// Each token's contributions are summed in increasing expert order, so its
// result never depends on which other tokens share the batch.
#pragma once

#include <memory>
#include <vector>

#include "model/layers/dense_ffn.h"
#include "model/layers/layer.h"
#include "model/model_config.h"
#include "model/weight_loader.h"

namespace pagoda {

struct MoeFfnOptions {
  enum class Shared {
    kNone,        // no shared expert (Mixtral, Qwen3-MoE)
    kPlain,       // added unscaled (DeepSeek, GLM-4.5)
    kSigmoidGated // times sigmoid(ffn_gate_inp_shexp . x) (Qwen2-MoE)
  };
  Shared shared = Shared::kNone;
};

// Expert choice and weights of one token. For tests and the layer itself.
//   logits: [n_expert] router outputs; bias: [n_expert] or null
//   ids / weights: [n_expert_used], written in decreasing order of choice score
// scratch: at least 2 * n_expert floats.
void RouteToken(const MoeConfig& c, const float* logits, const float* bias, int32_t* ids,
                float* weights, float* scratch);

class MoeFfn final : public FfnLayer {
 public:
  static Result<std::unique_ptr<MoeFfn>> Load(const WeightLoader& w, int layer,
                                              const ModelConfig& config,
                                              const MoeFfnOptions& options);

  int64_t ScratchFloats(int64_t n_tokens) const override;
  void Forward(const ForwardContext& ctx, const float* x, float* out) const override;

 private:
  MoeFfn() = default;

  MoeConfig cfg_;
  int64_t n_embd_ = 0;
  TensorView router_;                // [n_embd -> n_expert]
  const float* bias_ = nullptr;      // exp_probs_b.bias [n_expert] or null
  std::vector<PhasedWeight> gate_;   // [n_expert] of [n_embd -> n_ff_exp]
  std::vector<PhasedWeight> up_;     // [n_expert] of [n_embd -> n_ff_exp]
  std::vector<PhasedWeight> down_;   // [n_expert] of [n_ff_exp -> n_embd]
  std::unique_ptr<DenseFfn> shared_;
  const float* shared_gate_ = nullptr;  // ffn_gate_inp_shexp [n_embd] or null
};

}  // namespace pagoda
