// The rate-limit response headers OpenAI clients read, and the OpenAI-style
// 429 error body. Pure functions; no I/O.
//   x-ratelimit-limit-requests / -remaining-requests / -reset-requests
//   x-ratelimit-limit-tokens   / -remaining-tokens   / -reset-tokens
//   retry-after (whole seconds, at least 1) on a 429
// Reset values are durations in OpenAI's (Go's) format: "20ms", "1s",
// "8.64s", "6m0s", "1h2m3s".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagoda::tenancy {

struct HttpHeader {
  std::string name;
  std::string value;
};

// One limit as the headers show it.
struct LimitSnapshot {
  int64_t limit = 0;
  int64_t remaining = 0;
  int64_t reset_ms = 0;  // Unix ms when the window resets
};

// "20ms", "1s", "8.64s", "6m0s", "1h2m3s"; 0 and below -> "0s".
std::string FormatResetDuration(int64_t ms);

// The header set for the most constraining request and token limits (either
// may be absent), plus retry-after when retry_after_ms is given.
std::vector<HttpHeader> RateLimitHeaders(const std::optional<LimitSnapshot>& requests,
                                         const std::optional<LimitSnapshot>& tokens, int64_t now_ms,
                                         std::optional<int64_t> retry_after_ms = std::nullopt);

// Whole seconds for retry-after: ceil(ms / 1000), at least 1.
int64_t RetryAfterSeconds(int64_t retry_after_ms);

// {"error": {"message": ..., "type": type, "param": null, "code": "rate_limit_exceeded"}}
std::string RateLimitErrorBody(const std::string& message, const std::string& type);

}  // namespace pagoda::tenancy
