// EmbeddingRequest: POST /v1/embeddings as OpenAI defines it, parsed and
// validated. `input` is a string, a list of strings, a list of token ids, or
// a list of such lists; each entry is embedded on its own. vLLM's
// truncate_prompt_tokens (keep the last N tokens of each input) and
// normalize (false: the pooled vector as it is) are accepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "api/completion_request.h"

namespace pagoda::api {

enum class EncodingFormat : uint8_t { kFloat, kBase64 };

struct EmbeddingRequest {
  std::string model;
  std::vector<CompletionPrompt> inputs;  // at least one, none empty
  EncodingFormat encoding_format = EncodingFormat::kFloat;
  std::optional<int64_t> dimensions;     // >= 1; checked against the model by the server
  std::optional<int64_t> truncate_prompt_tokens;  // >= 1: keep the last N tokens
  bool normalize = true;                          // vLLM's: L2-normalise (default), or not
  std::string user;
};

// OpenAI's limit on inputs per request.
inline constexpr int kMaxEmbeddingInputs = 2048;

ApiResult<EmbeddingRequest> ParseEmbeddingRequest(std::string_view body, const RequestLimits& limits = {});

// The little-endian float32 bytes of `v` in base64 (encoding_format "base64",
// what the openai clients decode).
std::string Base64Floats(const std::vector<float>& v);

}  // namespace pagoda::api
