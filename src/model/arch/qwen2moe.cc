// qwen2moe: Qwen1.5-MoE / Qwen2-MoE. Qwen2 attention (NeoX RoPE, Q/K/V
// biases) and an MoE FFN: softmax router, top-k weights NOT renormalised
// (llama.cpp's graph fixes it so), plus a shared expert of width
// expert_shared_feed_forward_length scaled by sigmoid(ffn_gate_inp_shexp . x).
#include "model/arch/arch.h"
#include "model/model_registry.h"
#include "model/standard_decoder.h"

namespace pagoda {

void RegisterQwen2Moe(ArchRegistry& registry) {
  registry.Register("qwen2moe", [](std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                   const ModelOptions& options) {
    StandardDecoderRecipe recipe;
    recipe.traits.rope_neox = true;
    recipe.traits.moe_norm = ArchTraits::MoeNorm::kNever;
    recipe.attention.qkv_bias = Presence::kRequired;
    recipe.attention.out_bias = Presence::kAbsent;
    recipe.ffn = MoeFfnRecipe({MoeFfnOptions::Shared::kSigmoidGated});
    return LoadStandardDecoder(std::move(file), "qwen2moe", recipe, pool, options);
  });
}

}  // namespace pagoda
