#include "tokenizer/jinja/string_ops.h"

#include <utf8proc.h>

#include <cstdint>

#include "tokenizer/jinja/value.h"

namespace pagoda::jinja {
namespace {

// Maps each code point of `s`; bytes that are not valid UTF-8 pass through.
template <class F>
std::string MapCodePoints(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                    static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) {
      out += s[i++];
      continue;
    }
    utf8proc_uint8_t buf[4];
    const auto m = utf8proc_encode_char(f(cp, i), buf);
    out.append(reinterpret_cast<const char*>(buf), m);
    i += n;
  }
  return out;
}

bool IsPySpace(uint32_t cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

bool IsPySpaceText(const std::string& ch) {
  utf8proc_int32_t cp;
  if (utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(ch.data()), ch.size(), &cp) <= 0) return false;
  return IsPySpace(static_cast<uint32_t>(cp));
}

}  // namespace

std::string ToUpper(std::string_view s) {
  return MapCodePoints(s, [](utf8proc_int32_t cp, size_t) { return utf8proc_toupper(cp); });
}

std::string ToLower(std::string_view s) {
  return MapCodePoints(s, [](utf8proc_int32_t cp, size_t) { return utf8proc_tolower(cp); });
}

std::string ToTitle(std::string_view s) {
  bool word_start = true;
  return MapCodePoints(s, [&](utf8proc_int32_t cp, size_t) {
    const bool sep = IsPySpace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    const utf8proc_int32_t r = sep ? cp : word_start ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
    word_start = sep;
    return r;
  });
}

std::string Capitalize(std::string_view s) {
  return MapCodePoints(s, [](utf8proc_int32_t cp, size_t i) { return i == 0 ? utf8proc_toupper(cp) : utf8proc_tolower(cp); });
}

std::string Strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::vector<std::string> cps = SplitCodePoints(s);
  const std::vector<std::string> set = chars ? SplitCodePoints(*chars) : std::vector<std::string>{};
  auto strip_it = [&](const std::string& ch) {
    if (!chars) return IsPySpaceText(ch);
    for (const auto& c : set) {
      if (c == ch) return true;
    }
    return false;
  };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip_it(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(cps[e - 1])) --e;
  }
  std::string out;
  for (size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

std::vector<std::string> Split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  // Whitespace runs; leading and trailing whitespace give no empty parts.
  const std::vector<std::string> cps = SplitCodePoints(s);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && IsPySpaceText(cps[i])) ++i;
    if (i == cps.size()) break;
    std::string part;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      for (; i < cps.size(); ++i) part += cps[i];
      // Python keeps the remainder as is, minus trailing whitespace.
      out.push_back(Strip(part, std::nullopt, false, true));
      break;
    }
    while (i < cps.size() && !IsPySpaceText(cps[i])) part += cps[i++];
    out.push_back(std::move(part));
  }
  return out;
}

std::string Replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between every character and at both ends.
    const std::vector<std::string> cps = SplitCodePoints(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < cps.size()) out += cps[i];
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

}  // namespace pagoda::jinja
