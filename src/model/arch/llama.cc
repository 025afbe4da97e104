// llama: Llama 2/3, Mistral, TinyLlama and the many llama-shaped models.
// Adjacent-pair RoPE; optional attention biases; Llama-3.1 frequency factors
// arrive as rope_freqs.weight (read by ReadModelConfig); tied output allowed.
// With expert_count > 0 the file is Mixtral-style: every FFN is an MoE layer
// whose softmax top-k weights are renormalised (as llama.cpp's llama graph).
#include "model/arch/arch.h"
#include "model/model_registry.h"
#include "model/standard_decoder.h"

namespace pagoda {

void RegisterLlama(ArchRegistry& registry) {
  registry.Register("llama", [](std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                const ModelOptions& options) {
    StandardDecoderRecipe recipe;
    recipe.traits.rope_neox = false;
    recipe.attention.qkv_bias = Presence::kOptional;
    recipe.attention.out_bias = Presence::kOptional;
    recipe.traits.moe_norm = ArchTraits::MoeNorm::kAlways;
    recipe.ffn = MoeFfnRecipe({MoeFfnOptions::Shared::kNone});
    return LoadStandardDecoder(std::move(file), "llama", recipe, pool, options);
  });
}

}  // namespace pagoda
