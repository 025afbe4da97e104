// Pieces shared by the response builders: Usage, per-token logprobs,
// finish reasons, response ids and the SSE end marker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace pagoda::api {

enum class FinishReason { kStop, kLength, kToolCalls };
const char* FinishReasonName(FinishReason reason);  // "stop", "length", "tool_calls"

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
  // {"prompt_tokens", "completion_tokens", "total_tokens",
  //  "prompt_tokens_details": {"cached_tokens"}}
  nlohmann::json ToJson() const;
};

// One alternative at a position: the token's raw bytes (a byte-fallback
// token can be part of a UTF-8 sequence) and its log-probability.
struct TokenAlternative {
  std::string bytes;
  double logprob = 0.0;
};

// The sampled token at a position with its top alternatives. `logprob` is
// absent only for the first echoed prompt token of a completion.
struct TokenLogprob {
  std::string bytes;
  std::optional<double> logprob;
  std::vector<TokenAlternative> top;
};

// The `token` string for raw token bytes: the bytes themselves when they are
// valid UTF-8, else "bytes:\xe2\x80" (each byte as \xNN), as OpenAI does.
std::string TokenDisplayText(std::string_view bytes);

// Logprobs go on the wire finite: -inf becomes -9999.0 (as vLLM).
double WireLogprob(double logprob);

// "chatcmpl-<24 hex>", "cmpl-<24 hex>": random, unique per process run.
std::string NewResponseId(std::string_view prefix);
// Seconds since the Unix epoch, for `created`.
int64_t UnixTimeNow();

// The payload of the last SSE event of an OpenAI stream ("data: [DONE]").
inline constexpr std::string_view kSseDone = "[DONE]";

}  // namespace pagoda::api
