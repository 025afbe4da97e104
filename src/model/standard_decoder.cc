#include "model/standard_decoder.h"

#include "model/decoder_model.h"
#include "model/layers/dense_ffn.h"

namespace pagoda {

std::function<Result<std::unique_ptr<FfnLayer>>(const WeightLoader&, int, const ModelConfig&)>
MoeFfnRecipe(MoeFfnOptions options) {
  return [options](const WeightLoader& w, int layer,
                   const ModelConfig& c) -> Result<std::unique_ptr<FfnLayer>> {
    if (c.moe.n_expert == 0 || layer < c.moe.n_leading_dense) {
      PAGODA_ASSIGN_OR_RETURN(auto f, DenseFfn::Load(w, layer, c));
      return std::unique_ptr<FfnLayer>(std::move(f));
    }
    PAGODA_ASSIGN_OR_RETURN(auto f, MoeFfn::Load(w, layer, c, options));
    return std::unique_ptr<FfnLayer>(std::move(f));
  };
}

Result<std::unique_ptr<Model>> LoadStandardDecoder(std::shared_ptr<const GgufFile> file,
                                                   const std::string& arch,
                                                   const StandardDecoderRecipe& recipe,
                                                   ThreadPool& pool, const ModelOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(ModelConfig config, ReadModelConfig(*file, arch, recipe.traits));
  DecoderWeights weights;
  if (options.decode_weights) {
    if (!IsDecodeWeightType(*options.decode_weights)) {
      return InvalidArgument(std::string("--decode-weights ") + DTypeName(*options.decode_weights) +
                             " is not supported (q4_0 or q4_k)");
    }
    weights.decode_store = std::make_unique<DecodeWeightStore>(*options.decode_weights, pool);
  }
  if (kernels::WeightPackingEnabled()) weights.packed_store = std::make_unique<kernels::PackedWeightStore>(pool);
  const WeightLoader w(*file, weights.decode_store.get(), weights.packed_store.get());
  PAGODA_ASSIGN_OR_RETURN(weights.token_embd,
                          w.Embedding("token_embd.weight", config.n_embd, config.n_vocab));
  for (int l = 0; l < config.n_layer; ++l) {
    DecoderBlock b;
    PAGODA_ASSIGN_OR_RETURN(b.attn_norm, w.Vector(WeightLoader::LayerName(l, "attn_norm.weight"), config.n_embd));
    if (recipe.attention_layer) {
      PAGODA_ASSIGN_OR_RETURN(b.attn, recipe.attention_layer(w, l, config));
    } else {
      PAGODA_ASSIGN_OR_RETURN(b.attn, GqaAttention::Load(w, l, config, recipe.attention));
    }
    PAGODA_ASSIGN_OR_RETURN(b.ffn_norm, w.Vector(WeightLoader::LayerName(l, recipe.ffn_norm), config.n_embd));
    if (recipe.ffn) {
      PAGODA_ASSIGN_OR_RETURN(b.ffn, recipe.ffn(w, l, config));
    } else {
      PAGODA_ASSIGN_OR_RETURN(b.ffn, DenseFfn::Load(w, l, config));
    }
    weights.blocks.push_back(std::move(b));
  }
  PAGODA_ASSIGN_OR_RETURN(weights.output_norm, w.Vector("output_norm.weight", config.n_embd));
  const char* head = config.tied_output ? "token_embd.weight" : "output.weight";
  PAGODA_ASSIGN_OR_RETURN(weights.output, w.Linear(head, config.n_embd, config.n_vocab));
  PAGODA_ASSIGN_OR_RETURN(auto model, DecoderModel::Create(std::move(file), std::move(config),
                                                          std::move(weights), pool, options));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace pagoda
