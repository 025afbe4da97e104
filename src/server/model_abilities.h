// ModelAbilities: what the served model can do besides generating text
// (docs/EMBEDDINGS.md): embed, score pairs with a classifier head or by its
// yes/no answer logits, and how long one input may be. Fixed at start.
#pragma once

#include <cstdint>

#include "engine/engine.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

// What the served model can do besides generating (docs/EMBEDDINGS.md), fixed at start.
struct ModelAbilities {
  bool generates = true;      // has an LM head (chat, completions)
  bool causal = true;         // decoder (prefix sharing) or encoder
  PoolingType pooling = PoolingType::kLast;  // /v1/embeddings: the file's, else CLS (encoders) or last (decoders)
  int64_t n_embd = 0;         // embedding dimensions (and the most `dimensions` may ask)
  bool classifier = false;    // a cross-encoder's classifier head (pooling rank)
  TokenId yes = -1, no = -1;  // decoder rerankers: the answer tokens scored (Qwen3-Reranker)
  int32_t max_input_tokens = 0;  // one embedding / scoring input (context, or an encoder's step)
  bool embeds() const { return pooling != PoolingType::kRank; }
  bool scores() const { return classifier || (yes >= 0 && no >= 0); }
};

// From the loaded model, its tokenizer and the engine's limits.
ModelAbilities ModelAbilitiesOf(const Model& model, const Tokenizer& tokenizer, const EngineOptions& engine);

}  // namespace pagoda::server
