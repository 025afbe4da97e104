#include "server/model_abilities.h"

#include <algorithm>

namespace pagoda::server {

ModelAbilities ModelAbilitiesOf(const Model& model, const Tokenizer& tokenizer, const EngineOptions& engine) {
  ModelAbilities a;
  a.generates = model.generates();
  a.causal = model.causal();
  a.n_embd = model.config().n_embd;
  a.classifier = model.n_classifier_outputs() > 0;
  const PoolingType file = model.config().pooling;
  if (file == PoolingType::kUnspecified || file == PoolingType::kNone) {
    // vLLM's defaults: last token for decoders (Qwen3-Embedding), CLS for encoders (BGE).
    a.pooling = a.causal ? PoolingType::kLast : PoolingType::kCls;
  } else {
    a.pooling = file;
  }
  if (a.generates && !a.classifier) {
    // Decoder rerankers answer "yes" or "no" (Qwen3-Reranker's model card).
    a.yes = tokenizer.FindToken("yes");
    a.no = tokenizer.FindToken("no");
  }
  a.max_input_tokens = engine.n_ctx - 1;
  if (!a.causal) a.max_input_tokens = std::min(a.max_input_tokens, engine.max_batch_tokens);
  return a;
}

}  // namespace pagoda::server
