// DenseFfn: the SwiGLU feed-forward block, down(silu(gate(x)) * up(x)).
#pragma once

#include <memory>
#include <string>

#include "model/layers/layer.h"
#include "model/model_config.h"
#include "model/weight_loader.h"
#include "tensor/tensor_view.h"

namespace pagoda {

class DenseFfn final : public FfnLayer {
 public:
  // Reads blk.<layer>.ffn_{gate,up,down}.weight with n_ff = config.n_ff.
  static Result<std::unique_ptr<DenseFfn>> Load(const WeightLoader& w, int layer,
                                                const ModelConfig& config);
  // blk.<layer>.ffn_{gate,up,down}<suffix>.weight of width n_ff (suffix
  // "_shexp": an MoE layer's shared expert).
  static Result<std::unique_ptr<DenseFfn>> Load(const WeightLoader& w, int layer, int64_t n_embd,
                                                int64_t n_ff, const std::string& suffix);

  int64_t ScratchFloats(int64_t n_tokens) const override;
  void Forward(const ForwardContext& ctx, const float* x, float* out) const override;

 private:
  DenseFfn() = default;
  int64_t n_ff_ = 0;
  PhasedWeight gate_, up_, down_;  // [n_embd -> n_ff] x2, [n_ff -> n_embd]
};

}  // namespace pagoda
