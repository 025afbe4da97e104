#include "tenancy/rate_limiter_headers.h"

#include <nlohmann/json.hpp>

namespace pagoda::tenancy {

std::string FormatResetDuration(int64_t ms) {
  if (ms <= 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::string out;
  const int64_t h = ms / 3'600'000;
  const int64_t m = ms / 60'000 % 60;
  const int64_t s = ms / 1000 % 60;
  const int64_t frac = ms % 1000;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || m > 0) out += std::to_string(m) + "m";
  out += std::to_string(s);
  if (frac) {
    std::string f = std::to_string(frac + 1000).substr(1);  // 3 digits
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "s";
}

int64_t RetryAfterSeconds(int64_t retry_after_ms) {
  const int64_t s = (retry_after_ms + 999) / 1000;
  return s < 1 ? 1 : s;
}

std::vector<HttpHeader> RateLimitHeaders(const std::optional<LimitSnapshot>& requests,
                                         const std::optional<LimitSnapshot>& tokens, int64_t now_ms,
                                         std::optional<int64_t> retry_after_ms) {
  std::vector<HttpHeader> h;
  auto add = [&](const char* what, const LimitSnapshot& s) {
    h.push_back({std::string("x-ratelimit-limit-") + what, std::to_string(s.limit)});
    h.push_back({std::string("x-ratelimit-remaining-") + what, std::to_string(s.remaining < 0 ? 0 : s.remaining)});
    h.push_back({std::string("x-ratelimit-reset-") + what, FormatResetDuration(s.reset_ms - now_ms)});
  };
  if (requests) add("requests", *requests);
  if (tokens) add("tokens", *tokens);
  if (retry_after_ms) h.push_back({"retry-after", std::to_string(RetryAfterSeconds(*retry_after_ms))});
  return h;
}

std::string RateLimitErrorBody(const std::string& message, const std::string& type) {
  nlohmann::json j = {{"error",
                       {{"message", message}, {"type", type}, {"param", nullptr}, {"code", "rate_limit_exceeded"}}}};
  return j.dump();
}

}  // namespace pagoda::tenancy
