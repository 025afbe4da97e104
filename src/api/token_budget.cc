#include "api/token_budget.h"

#include <algorithm>
#include <string>

namespace pagoda::api {

ApiResult<int64_t> ResolveMaxTokens(int64_t prompt_tokens, const GenerationOptions& options, int64_t n_ctx,
                                    std::optional<int64_t> default_max_tokens, std::string_view prompt_param) {
  const std::string ctx = "This model's maximum context length is " + std::to_string(n_ctx) + " tokens. ";
  if (prompt_tokens >= n_ctx) {
    return ContextLengthExceeded(ctx + "However, your " + std::string(prompt_param) + " resulted in " +
                                     std::to_string(prompt_tokens) +
                                     " tokens, which leaves no room for the completion. Please reduce the length of "
                                     "the " + std::string(prompt_param) + ".",
                                 prompt_param);
  }
  const int64_t room = n_ctx - prompt_tokens;
  if (options.max_tokens) {
    if (*options.max_tokens > room) {
      return ContextLengthExceeded(ctx + "However, you requested " + std::to_string(prompt_tokens + *options.max_tokens) +
                                       " tokens (" + std::to_string(prompt_tokens) + " in the " +
                                       std::string(prompt_param) + ", " + std::to_string(*options.max_tokens) +
                                       " in the completion). Please reduce the length of the " +
                                       std::string(prompt_param) + " or of '" + options.max_tokens_param + "'.",
                                   options.max_tokens_param);
    }
    return *options.max_tokens;
  }
  return default_max_tokens ? std::min(*default_max_tokens, room) : room;
}

std::optional<ApiError> CheckTokenIds(std::span<const int32_t> ids, int32_t n_vocab, std::string_view param) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n_vocab) {
      const std::string p = std::string(param) + "[" + std::to_string(i) + "]";
      return InvalidValue(p, "Invalid '" + p + "': token id " + std::to_string(ids[i]) +
                                 " is outside the vocabulary [0, " + std::to_string(n_vocab) + ").");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> CheckLogitBias(const GenerationOptions& options, int32_t n_vocab) {
  for (const auto& [id, bias] : options.logit_bias) {
    if (id < 0 || id >= n_vocab) {
      return InvalidValue("logit_bias", "Invalid 'logit_bias': token id " + std::to_string(id) +
                                            " is outside the vocabulary [0, " + std::to_string(n_vocab) + ").");
    }
  }
  return std::nullopt;
}

}  // namespace pagoda::api
