// From API inputs to the token lists a prefill-only request computes
// (docs/EMBEDDINGS.md): texts encoded as the model expects (BOS/EOS, or
// [CLS] ... [SEP]), query/document pairs in the model's scoring form, the
// optional left truncation (truncate_prompt_tokens), and the length check
// naming the input at fault. Any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/completion_request.h"
#include "engine/engine_request.h"
#include "server/serve_context.h"

namespace pagoda::server {

// One input's tokens: token ids as given (checked against the vocabulary)
// or the encoded text; keeps the last `truncate` tokens when set; 400
// naming `param` when empty or longer than the model takes.
api::ApiResult<std::vector<TokenId>> InputTokens(const ServeContext& ctx, const api::CompletionPrompt& input,
                                                 std::optional<int64_t> truncate, const std::string& param);

// The prefill-only request scoring `query` against every document: each
// candidate's tokens in the model's pair form (cross-encoder: [CLS] query
// [SEP] document [SEP]; decoder reranker: Qwen3-Reranker's prompt), split
// into their longest common prefix (EngineRequest::prompt, computed once)
// and the candidates' suffixes. 400 naming documents[i] (or text_2[i]) when
// a pair is too long. top_n 0: every candidate's score.
api::ApiResult<EngineRequest> ScoreRequestFor(const ServeContext& ctx, const std::string& query,
                                              const std::vector<std::string>& documents,
                                              std::optional<int64_t> truncate, int32_t top_n,
                                              const std::string& documents_param, const std::string& id);

// A relevance score as the API reports it: a cross-encoder's logit through a
// sigmoid (vLLM and Cohere report [0, 1]); P(yes) as it is.
double RelevanceScore(const ServeContext& ctx, float engine_score);

}  // namespace pagoda::server
