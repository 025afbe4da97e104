#include "api/response_common.h"

#include <chrono>
#include <cmath>
#include <mutex>
#include <random>

#include <nlohmann/json.hpp>

#include "api/json_text.h"

namespace pagoda::api {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kToolCalls: return "tool_calls";
  }
  return "stop";
}

nlohmann::json Usage::ToJson() const {
  return nlohmann::json{{"prompt_tokens", prompt_tokens},
                        {"completion_tokens", completion_tokens},
                        {"total_tokens", prompt_tokens + completion_tokens},
                        {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

std::string TokenDisplayText(std::string_view bytes) {
  if (IsValidUtf8(bytes)) return std::string(bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "bytes:";
  for (unsigned char c : bytes) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

double WireLogprob(double logprob) {
  if (std::isnan(logprob) || logprob < -9999.0) return -9999.0;
  return logprob;
}

std::string NewResponseId(std::string_view prefix) {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t a, b;
  {
    std::lock_guard<std::mutex> lock(mu);
    a = rng();
    b = rng();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  id += '-';
  for (int i = 0; i < 16; ++i) id += kHex[(a >> (i * 4)) & 15];
  for (int i = 0; i < 8; ++i) id += kHex[(b >> (i * 4)) & 15];
  return id;
}

int64_t UnixTimeNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace pagoda::api
