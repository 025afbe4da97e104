// LoadStandardDecoder: builds a DecoderModel from a GGUF file laid out the
// llama.cpp way (token_embd, blk.N.attn_norm / attn_{q,k,v,output} /
// ffn_norm / ffn_{gate,up,down}, output_norm, output). An architecture file
// states only what differs (RoPE pairing, biases, QK-norm, FFN type).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "model/layers/gqa_attention.h"
#include "model/model.h"

namespace pagoda {

struct StandardDecoderRecipe {
  ArchTraits traits;
  GqaAttentionOptions attention;
  // FFN of each layer; empty means DenseFfn everywhere. MoE architectures
  // return their expert layer here.
  std::function<Result<std::unique_ptr<FfnLayer>>(const WeightLoader&, int layer,
                                                  const ModelConfig&)>
      ffn;
};

Result<std::unique_ptr<Model>> LoadStandardDecoder(std::shared_ptr<const GgufFile> file,
                                                   const std::string& arch,
                                                   const StandardDecoderRecipe& recipe,
                                                   ThreadPool& pool, const ModelOptions& options);

}  // namespace pagoda
