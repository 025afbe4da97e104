// qwen3: Qwen3 dense. NeoX RoPE, no biases, RMSNorm of each Q and K head
// (attn_q_norm / attn_k_norm, [head_dim]) before RoPE; head_dim from
// attention.key_length (128 in Qwen3, not n_embd / n_head).
#include "model/arch/arch.h"
#include "model/model_registry.h"
#include "model/standard_decoder.h"

namespace pagoda {

void RegisterQwen3(ArchRegistry& registry) {
  registry.Register("qwen3", [](std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                const ModelOptions& options) {
    StandardDecoderRecipe recipe;
    recipe.traits.rope_neox = true;
    recipe.attention.qkv_bias = Presence::kAbsent;
    recipe.attention.out_bias = Presence::kAbsent;
    recipe.attention.qk_norm = Presence::kRequired;
    return LoadStandardDecoder(std::move(file), "qwen3", recipe, pool, options);
  });
}

}  // namespace pagoda
