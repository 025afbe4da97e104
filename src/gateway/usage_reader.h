// ReadUsage: the `usage` an OpenAI-compatible replica reports in a response
// body or in a stream's final usage chunk (stream_options.include_usage),
// for the predicted-vs-reported cached-token metrics. Reads two numbers and
// nothing else of the body; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda::gateway {

struct ReportedUsage {
  int64_t prompt_tokens = 0;
  std::optional<int64_t> cached_tokens;  // usage.prompt_tokens_details.cached_tokens, when reported
};

// nullopt when `json` is not an object with a `usage` object (a chunk
// without usage, garbage, a non-numeric prompt_tokens).
std::optional<ReportedUsage> ReadUsage(std::string_view json);

}  // namespace pagoda::gateway
