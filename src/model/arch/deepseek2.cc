// deepseek2: DeepSeek-V2/V2.5/V3/R1, Kimi K2, GLM-4.7-Flash, Kanana-2 (what
// llama.cpp converts them to). MLA attention (both GGUF layouts, with or
// without q LoRA; RoPE on the rope part only, GPT-J pairs), leading dense
// layers, then MoE layers with shared experts added unscaled: softmax or
// sigmoid gating (expert_gating_func; absent = softmax, as V2 files),
// exp_probs_b selection bias, group-limited routing, expert_weights_norm and
// expert_weights_scale from the file, YaRN with its attention-scale
// correction.
#include "model/arch/arch.h"
#include "model/layers/mla_attention.h"
#include "model/model_registry.h"
#include "model/standard_decoder.h"

namespace pagoda {

void RegisterDeepseek2(ArchRegistry& registry) {
  registry.Register("deepseek2", [](std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                    const ModelOptions& options) {
    StandardDecoderRecipe recipe;
    recipe.traits.rope_neox = false;
    recipe.traits.mla = true;
    recipe.traits.moe_norm = ArchTraits::MoeNorm::kFromFile;
    const MlaMode mode = options.mla_decompress ? MlaMode::kDecompress : MlaMode::kAbsorbed;
    recipe.attention_layer = [mode](const WeightLoader& w, int layer,
                                    const ModelConfig& c) -> Result<std::unique_ptr<AttentionLayer>> {
      PAGODA_ASSIGN_OR_RETURN(auto a, MlaAttention::Load(w, layer, c, mode));
      return std::unique_ptr<AttentionLayer>(std::move(a));
    };
    recipe.ffn = MoeFfnRecipe({MoeFfnOptions::Shared::kPlain});
    return LoadStandardDecoder(std::move(file), "deepseek2", recipe, pool, options);
  });
}

}  // namespace pagoda
