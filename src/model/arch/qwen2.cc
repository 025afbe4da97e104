// qwen2: Qwen2 / Qwen2.5. NeoX RoPE, Q/K/V biases (required), no output bias.
#include "model/arch/arch.h"
#include "model/model_registry.h"
#include "model/standard_decoder.h"

namespace pagoda {

void RegisterQwen2(ArchRegistry& registry) {
  registry.Register("qwen2", [](std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                const ModelOptions& options) {
    StandardDecoderRecipe recipe;
    recipe.traits.rope_neox = true;
    recipe.attention.qkv_bias = Presence::kRequired;
    recipe.attention.out_bias = Presence::kAbsent;
    return LoadStandardDecoder(std::move(file), "qwen2", recipe, pool, options);
  });
}

}  // namespace pagoda
