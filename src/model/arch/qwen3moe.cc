// qwen3moe: Qwen3-30B-A3B, Qwen3-235B-A22B. Qwen3 attention (NeoX RoPE,
// per-head Q/K RMSNorm, head_dim from key_length) and an MoE FFN without a
// shared expert: softmax router, top-k weights renormalised.
#include "model/arch/arch.h"
#include "model/model_registry.h"
#include "model/standard_decoder.h"

namespace pagoda {

void RegisterQwen3Moe(ArchRegistry& registry) {
  registry.Register("qwen3moe", [](std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                   const ModelOptions& options) {
    StandardDecoderRecipe recipe;
    recipe.traits.rope_neox = true;
    recipe.traits.moe_norm = ArchTraits::MoeNorm::kAlways;
    recipe.attention.qkv_bias = Presence::kAbsent;
    recipe.attention.out_bias = Presence::kAbsent;
    recipe.attention.qk_norm = Presence::kRequired;
    recipe.ffn = MoeFfnRecipe({MoeFfnOptions::Shared::kNone});
    return LoadStandardDecoder(std::move(file), "qwen3moe", recipe, pool, options);
  });
}

}  // namespace pagoda
