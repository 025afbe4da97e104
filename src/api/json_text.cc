#include "api/json_text.h"

#include <cstdint>

namespace pagoda::api {

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;  // continuation byte, 0xC0/0xC1 or > 0xF4
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const unsigned char cc = p[i + k];
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000)) return false;  // overlong
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;                            // surrogate
    if (cp > 0x10FFFF) return false;
    i += len;
  }
  return true;
}

namespace {

// Maximum [ / { nesting outside strings; stops early past `limit`.
int NestingDepth(std::string_view s, int limit) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) max_depth = depth;
      if (max_depth > limit) return max_depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace

ApiResult<nlohmann::json> ParseJsonObject(std::string_view body) {
  if (!IsValidUtf8(body)) return InvalidUtf8("request body");
  if (NestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    return InvalidJson("nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels.");
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body.begin(), body.end());
  } catch (const nlohmann::json::exception& e) {
    // e.what() names the position ("parse error at line 1, column 2: ..."),
    // never the body's contents beyond the offending token.
    return InvalidJson(e.what());
  }
  if (!j.is_object()) return InvalidJson("the top level must be a JSON object.");
  return j;
}

std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pagoda::api
