#include "http/multipart.h"

#include <cctype>

#include "http/message.h"

namespace pagoda::http {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The value of `key` among "a=1; key=\"v\"" parameters (quotes removed).
std::optional<std::string> Param(std::string_view header, std::string_view key) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t semi = header.find(';', pos);
    // A quoted value may hold ';'.
    size_t eq = header.find('=', pos);
    if (eq != std::string_view::npos && (semi == std::string_view::npos || eq < semi)) {
      std::string_view k = Trim(header.substr(pos, eq - pos));
      size_t v = eq + 1;
      while (v < header.size() && header[v] == ' ') ++v;
      std::string value;
      size_t next;
      if (v < header.size() && header[v] == '"') {
        size_t i = v + 1;
        for (; i < header.size() && header[i] != '"'; ++i) {
          if (header[i] == '\\' && i + 1 < header.size()) ++i;
          value += header[i];
        }
        next = header.find(';', i);
      } else {
        next = header.find(';', v);
        value = std::string(Trim(header.substr(v, next == std::string_view::npos ? std::string_view::npos : next - v)));
      }
      if (EqualsIgnoreCase(k, key)) return value;
      if (next == std::string_view::npos) break;
      pos = next + 1;
    } else {
      if (semi == std::string_view::npos) break;
      pos = semi + 1;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<FormPart>> ParseMultipartForm(std::string_view content_type, std::string_view body) {
  std::string_view type = Trim(content_type.substr(0, content_type.find(';')));
  if (!EqualsIgnoreCase(type, "multipart/form-data")) {
    return InvalidArgument("expected a multipart/form-data body (Content-Type: multipart/form-data; boundary=...)");
  }
  auto boundary = Param(content_type.substr(type.size()), "boundary");
  if (!boundary || boundary->empty() || boundary->size() > 200) {
    return InvalidArgument("the multipart/form-data Content-Type has no usable boundary");
  }
  const std::string delim = "--" + *boundary;
  size_t pos = body.find(delim);
  if (pos == std::string_view::npos) return InvalidArgument("multipart body: the boundary does not appear");
  std::vector<FormPart> parts;
  for (;;) {
    pos += delim.size();
    if (body.substr(pos, 2) == "--") return parts;  // closing boundary
    if (body.substr(pos, 2) != "\r\n") return InvalidArgument("multipart body: malformed boundary line");
    pos += 2;
    const size_t head_end = body.find("\r\n\r\n", pos);
    if (head_end == std::string_view::npos) return InvalidArgument("multipart body: a part has no header end");
    FormPart part;
    bool named = false;
    std::string_view headers = body.substr(pos, head_end - pos);
    while (!headers.empty()) {
      size_t eol = headers.find("\r\n");
      std::string_view line = headers.substr(0, eol);
      headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string_view name = Trim(line.substr(0, colon));
      std::string_view value = Trim(line.substr(colon + 1));
      if (EqualsIgnoreCase(name, "content-disposition")) {
        if (auto n = Param(value, "name")) {
          part.name = *n;
          named = true;
        }
        part.filename = Param(value, "filename");
      } else if (EqualsIgnoreCase(name, "content-type")) {
        part.content_type = std::string(value);
      }
    }
    if (!named) return InvalidArgument("multipart body: a part has no Content-Disposition name");
    const size_t data_begin = head_end + 4;
    const size_t next = body.find("\r\n" + delim, data_begin);
    if (next == std::string_view::npos) return InvalidArgument("multipart body: it ends before the closing boundary");
    part.data = body.substr(data_begin, next - data_begin);
    parts.push_back(std::move(part));
    pos = next + 2;
  }
}

}  // namespace pagoda::http
