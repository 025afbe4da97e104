// ReadUsage: the `usage` an OpenAI-compatible replica reports in a response
// body or in a stream's final usage chunk (stream_options.include_usage),
// for the predicted-vs-reported cached-token metrics and the usage ledger.
// Reads the token counts and nothing else of the body; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda::gateway {

struct ReportedUsage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;         // 0 when not reported
  std::optional<int64_t> cached_tokens;  // usage.prompt_tokens_details.cached_tokens, when reported
  // A stream chunk that carries only the usage (`"choices": []`), the one
  // stream_options.include_usage adds at the end.
  bool usage_only = false;
};

// nullopt when `json` is not an object with a `usage` object (a chunk
// without usage, garbage, a non-numeric prompt_tokens).
std::optional<ReportedUsage> ReadUsage(std::string_view json);

}  // namespace pagoda::gateway
