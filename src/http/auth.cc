#include "http/auth.h"

#include <algorithm>

namespace pagoda::http {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Touch max(len) bytes whatever the contents, so the time says nothing
  // about where the first difference is.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

bool BearerTokenMatches(const Request& request, std::string_view expected_key) {
  if (expected_key.empty()) return true;
  const std::string* auth = request.headers.Find("Authorization");
  if (auth == nullptr) return false;
  std::string_view v = *auth;
  constexpr std::string_view kScheme = "bearer ";
  if (v.size() < kScheme.size() || !EqualsIgnoreCase(v.substr(0, kScheme.size()), kScheme)) return false;
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return ConstantTimeEquals(v, expected_key);
}

std::optional<Response> RequireBearerToken(const Request& request, std::string_view expected_key) {
  if (BearerTokenMatches(request, expected_key)) return std::nullopt;
  Response r = ErrorResponse(401, "Incorrect or missing API key. Send 'Authorization: Bearer <key>'.",
                             "invalid_api_key");
  r.headers.Set("WWW-Authenticate", "Bearer");
  return r;
}

}  // namespace pagoda::http
