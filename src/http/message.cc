#include "http/message.h"

#include <cstdio>

namespace pagoda::http {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

void Headers::Set(std::string_view name, std::string value) {
  std::erase_if(fields_, [&](const auto& f) { return EqualsIgnoreCase(f.first, name); });
  fields_.emplace_back(std::string(name), std::move(value));
}

const std::string* Headers::Find(std::string_view name) const {
  for (const auto& f : fields_) {
    if (EqualsIgnoreCase(f.first, name)) return &f.second;
  }
  return nullptr;
}

Response Response::Json(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Response Response::Text(int status, std::string body) {
  Response r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      // Copy a well-formed multi-byte sequence; anything else becomes U+FFFD.
      size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
      bool ok = len > 0 && i + len <= s.size() && c <= 0xF4;
      for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
      if (ok && len == 3) {
        const unsigned char c1 = p[i + 1];
        ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogate
      }
      if (ok && len == 4) {
        const unsigned char c1 = p[i + 1];
        ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
      }
      if (ok) {
        out.append(s.substr(i, len));
        i += len;
      } else {
        out += "\xEF\xBF\xBD";
        ++i;
      }
    }
  }
  out += '"';
  return out;
}

Response ErrorResponse(int status, std::string_view message, std::string_view code) {
  const char* type = status >= 500 ? "server_error" : "invalid_request_error";
  std::string body = "{\"error\":{\"message\":" + JsonQuote(message) + ",\"type\":\"" + type +
                     "\",\"param\":null,\"code\":" + (code.empty() ? std::string("null") : JsonQuote(code)) + "}}";
  return Response::Json(status, std::move(body));
}

}  // namespace pagoda::http
