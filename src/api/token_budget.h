// Model-dependent request checks the server runs once it knows the model's
// context size and vocabulary: how many tokens to generate, token ids in
// range, logit_bias ids in range. Errors are OpenAI-shaped (400).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "api/api_error.h"
#include "api/generation_options.h"

namespace pagoda::api {

// The number of tokens to generate for a prompt of `prompt_tokens` in a
// context of `n_ctx`:
//  - the prompt fills the context: 400 context_length_exceeded (param
//    `prompt_param`: "messages" or "prompt");
//  - options.max_tokens set and prompt + max_tokens > n_ctx: 400
//    context_length_exceeded (param max_tokens / max_completion_tokens);
//  - absent: min(default_max_tokens, n_ctx - prompt_tokens), or the rest of
//    the context when there is no default.
ApiResult<int64_t> ResolveMaxTokens(int64_t prompt_tokens, const GenerationOptions& options, int64_t n_ctx,
                                    std::optional<int64_t> default_max_tokens, std::string_view prompt_param);

// Every id in [0, n_vocab); the error names `param` and the first bad id.
std::optional<ApiError> CheckTokenIds(std::span<const int32_t> ids, int32_t n_vocab, std::string_view param);

// Every logit_bias key in [0, n_vocab).
std::optional<ApiError> CheckLogitBias(const GenerationOptions& options, int32_t n_vocab);

}  // namespace pagoda::api
