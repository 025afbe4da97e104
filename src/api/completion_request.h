// CompletionRequest: POST /v1/completions (the legacy text API), parsed and
// validated. `prompt` may be a string, a list of strings, a list of token
// ids, or a list of such lists; each entry is one prompt and gets `n` choices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/api_error.h"
#include "api/generation_options.h"

namespace pagoda::api {

struct CompletionPrompt {
  bool is_tokens = false;
  std::string text;             // when !is_tokens (may be empty: generation starts from BOS)
  std::vector<int32_t> tokens;  // when is_tokens (non-empty; ids checked against the vocab by the server)
};

struct CompletionRequest {
  GenerationOptions options;
  std::vector<CompletionPrompt> prompts;  // at least one
  bool echo = false;                      // prepend the prompt to each choice's text
  std::optional<int> logprobs;            // top-N per token, [0, limits.max_completion_logprobs]
};

// Completions generate 16 tokens when max_tokens is absent (OpenAI's default).
inline constexpr int64_t kCompletionDefaultMaxTokens = 16;
// Prompts in one request (each with n choices).
inline constexpr int kMaxPromptsPerRequest = 16;

ApiResult<CompletionRequest> ParseCompletionRequest(std::string_view body, const RequestLimits& limits = {});
ApiResult<CompletionRequest> ParseCompletionJson(const nlohmann::json& body, const RequestLimits& limits = {});

namespace internal {
// One token-id list ([1, 2, 3]): integers in [0, INT32_MAX], non-empty.
std::optional<ApiError> ReadTokenIds(const nlohmann::json& v, const std::string& param, std::vector<int32_t>* out);
// A string, a list of strings, a list of token ids, or a list of such lists
// (completions' prompt, embeddings' input), at most `max_prompts` entries.
std::optional<ApiError> ReadPromptList(const nlohmann::json& v, const std::string& param, int max_prompts,
                                       bool allow_empty_text, std::vector<CompletionPrompt>* out);
}  // namespace internal

}  // namespace pagoda::api
