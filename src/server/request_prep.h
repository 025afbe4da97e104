// From a parsed API request to engine requests: model-name check, grammar
// constraint (prompt encoding is chat/prompt_encoding.h, shared with the gateway), and the mapping of the
// OpenAI sampling fields to SamplingParams. Any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/chat_request.h"
#include "api/generation_options.h"
#include "chat/constraint_builder.h"
#include "engine/engine_request.h"
#include "server/serve_context.h"

namespace pagoda::server {

inline constexpr const char* kSystemFingerprint = "fp_pagoda";

// 404 model_not_found unless `model` is "" or the served model's name.
std::optional<api::ApiError> CheckModel(const ServeContext& ctx, const std::string& model);

// 400 naming `model` when the served model does not generate text (an
// embedding model or cross-encoder), for /v1/chat/completions and /v1/completions.
std::optional<api::ApiError> CheckGenerates(const ServeContext& ctx);

// 400 invalid_value naming `n` when n_prompts x n sequences exceed the
// engine's waiting queue: such a request could never be admitted, and a 429
// would have the client retry forever.
std::optional<api::ApiError> CheckQueueFits(const ServeContext& ctx, int64_t n_prompts, int n);

// The grammar constraint for a request's response_format / grammar / regex /
// forced tool call (chat/constraint_builder.h), compiled through the cache;
// std::nullopt when the output is free. Errors are 400s naming the field
// ("response_format", "tools", "grammar", "regex") with the converter's or
// compiler's message (an unsupported schema keyword is named there).
api::ApiResult<std::optional<GrammarConstraint>> BuildGrammarConstraint(const ServeContext& ctx,
                                                                       const chat::ConstraintRequest& request);

// An engine request for one prompt: sampling from `options` (a random seed
// when none was given), `n`, logprobs, max_tokens already resolved.
EngineRequest MakeEngineRequest(const api::GenerationOptions& options, std::vector<TokenId> prompt,
                                int64_t max_tokens, int top_logprobs, bool logprobs, const std::string& id);

}  // namespace pagoda::server
