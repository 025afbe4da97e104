// LoadStandardDecoder: builds a DecoderModel from a GGUF file laid out the
// llama.cpp way (token_embd, blk.N.attn_norm / attn_{q,k,v,output} /
// ffn_norm / ffn_{gate,up,down}, output_norm, output). An architecture file
// states only what differs (RoPE pairing, biases, QK-norm, attention and FFN
// layer types).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "model/layers/gqa_attention.h"
#include "model/layers/moe_ffn.h"
#include "model/model.h"

namespace pagoda {

struct StandardDecoderRecipe {
  ArchTraits traits;
  GqaAttentionOptions attention;
  // Attention of each layer; empty means GqaAttention with `attention`.
  std::function<Result<std::unique_ptr<AttentionLayer>>(const WeightLoader&, int layer,
                                                        const ModelConfig&)>
      attention_layer;
  // The FFN pre-norm's tensor suffix (glm4moe: "post_attention_norm.weight").
  const char* ffn_norm = "ffn_norm.weight";
  // FFN of each layer; empty means DenseFfn everywhere. MoE architectures
  // return their expert layer here.
  std::function<Result<std::unique_ptr<FfnLayer>>(const WeightLoader&, int layer,
                                                  const ModelConfig&)>
      ffn;
};

// The FFN of a mixture-of-experts model: DenseFfn for the leading dense
// layers (leading_dense_block_count) and MoeFfn with `options` after them;
// DenseFfn everywhere when the file has no experts (expert_count 0).
std::function<Result<std::unique_ptr<FfnLayer>>(const WeightLoader&, int, const ModelConfig&)>
MoeFfnRecipe(MoeFfnOptions options);

Result<std::unique_ptr<Model>> LoadStandardDecoder(std::shared_ptr<const GgufFile> file,
                                                   const std::string& arch,
                                                   const StandardDecoderRecipe& recipe,
                                                   ThreadPool& pool, const ModelOptions& options);

}  // namespace pagoda
