// glm4moe: GLM-4.5 / 4.6 / 4.7 (and Air). GQA attention with Q/K/V biases,
// optional per-head Q/K RMSNorm, partial NeoX rotary (rope.dimension_count =
// half the head); FFN pre-norm named post_attention_norm; leading dense
// layers, then MoE with sigmoid gating (the default when the key is absent),
// exp_probs_b selection bias and one shared expert. The trailing
// nextn_predict_layers blocks (NextN / MTP) are in the file but not run.
#include "model/arch/arch.h"
#include "model/model_registry.h"
#include "model/standard_decoder.h"

namespace pagoda {

void RegisterGlm4Moe(ArchRegistry& registry) {
  registry.Register("glm4moe", [](std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                  const ModelOptions& options) {
    StandardDecoderRecipe recipe;
    recipe.traits.rope_neox = true;
    recipe.traits.moe_norm = ArchTraits::MoeNorm::kFromFile;
    recipe.traits.default_gating = MoeConfig::Gating::kSigmoid;
    recipe.traits.skip_nextn_layers = true;
    recipe.attention.qkv_bias = Presence::kRequired;
    recipe.attention.out_bias = Presence::kAbsent;
    recipe.attention.qk_norm = Presence::kOptional;
    recipe.ffn_norm = "post_attention_norm.weight";
    recipe.ffn = MoeFfnRecipe({MoeFfnOptions::Shared::kPlain});
    return LoadStandardDecoder(std::move(file), "glm4moe", recipe, pool, options);
  });
}

}  // namespace pagoda
