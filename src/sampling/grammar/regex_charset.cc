#include "sampling/grammar/regex_charset.h"

#include <algorithm>
#include <cstdio>

namespace pagoda::grammar {

namespace {

constexpr char32_t kSurrogateLo = 0xD800;
constexpr char32_t kSurrogateHi = 0xDFFF;

}  // namespace

CodePointSet CodePointSet::Range(char32_t lo, char32_t hi) {
  CodePointSet s;
  s.Add(lo, hi);
  return s;
}

CodePointSet CodePointSet::All() {
  CodePointSet s;
  s.ranges_ = {{0, kSurrogateLo - 1}, {kSurrogateHi + 1, kMaxCodePoint}};
  return s;
}

void CodePointSet::Add(char32_t lo, char32_t hi) {
  if (lo > hi) return;
  if (hi > kMaxCodePoint) hi = kMaxCodePoint;
  // Surrogates are not scalar values: cut them out of the added range.
  if (lo <= kSurrogateHi && hi >= kSurrogateLo) {
    if (lo < kSurrogateLo) Add(lo, kSurrogateLo - 1);
    if (hi > kSurrogateHi) Add(kSurrogateHi + 1, hi);
    return;
  }
  ranges_.push_back({lo, hi});
  std::sort(ranges_.begin(), ranges_.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> merged;
  for (const auto& r : ranges_) {
    // Adjacent ranges merge too, except across the surrogate gap, which
    // keeps All() as two ranges either way.
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

void CodePointSet::Add(const CodePointSet& other) {
  for (const auto& r : other.ranges_) Add(r.lo, r.hi);
}

CodePointSet CodePointSet::Complement() const { return All().Minus(*this); }

CodePointSet CodePointSet::Minus(const CodePointSet& other) const {
  CodePointSet out;
  for (const auto& r : ranges_) {
    char32_t lo = r.lo;
    bool done = false;
    for (const auto& o : other.ranges_) {
      if (o.hi < lo || o.lo > r.hi) continue;
      if (o.lo > lo) out.Add(lo, o.lo - 1);
      if (o.hi >= r.hi) {
        done = true;
        break;
      }
      lo = o.hi + 1;
    }
    if (!done) out.Add(lo, r.hi);
  }
  return out;
}

CodePointSet CodePointSet::Intersect(const CodePointSet& other) const {
  return Minus(Minus(other));
}

bool CodePointSet::Contains(char32_t c) const {
  for (const auto& r : ranges_) {
    if (c >= r.lo && c <= r.hi) return true;
  }
  return false;
}

std::string CodePointSet::ToGbnf() const {
  std::string out = "[";
  for (const auto& r : ranges_) {
    out += GbnfEscapeCodePoint(r.lo, true);
    if (r.hi != r.lo) {
      if (r.hi != r.lo + 1) out += '-';
      out += GbnfEscapeCodePoint(r.hi, true);
    }
  }
  out += ']';
  return out;
}

std::string GbnfEscapeCodePoint(char32_t c, bool in_class) {
  char buf[16];
  if (c >= 0x20 && c < 0x7F) {
    const bool special = c == '"' || c == '\\' ||
                         (in_class && (c == ']' || c == '[' || c == '^' || c == '-'));
    if (!special) return std::string(1, static_cast<char>(c));
  }
  if (c < 0x80) {
    std::snprintf(buf, sizeof(buf), "\\x%02X", static_cast<unsigned>(c));
  } else if (c <= 0xFFFF) {
    std::snprintf(buf, sizeof(buf), "\\u%04X", static_cast<unsigned>(c));
  } else {
    std::snprintf(buf, sizeof(buf), "\\U%08X", static_cast<unsigned>(c));
  }
  return buf;
}

std::string GbnfLiteral(std::string_view utf8) {
  std::string out = "\"";
  size_t i = 0;
  while (i < utf8.size()) {
    // Decode one code point at a time so invalid bytes can be passed through.
    std::u32string one;
    size_t len = 1;
    const unsigned char b = static_cast<unsigned char>(utf8[i]);
    if (b >= 0xF0) len = 4; else if (b >= 0xE0) len = 3; else if (b >= 0xC0) len = 2;
    if (i + len <= utf8.size() && DecodeUtf8(utf8.substr(i, len), &one) && one.size() == 1) {
      out += GbnfEscapeCodePoint(one[0], false);
      i += len;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", static_cast<unsigned>(b));
      out += buf;
      ++i;
    }
  }
  out += '"';
  return out;
}

bool DecodeUtf8(std::string_view s, std::u32string* out) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char b0 = static_cast<unsigned char>(s[i]);
    char32_t c;
    size_t n;
    if (b0 < 0x80) { c = b0; n = 1; }
    else if ((b0 & 0xE0) == 0xC0) { c = b0 & 0x1F; n = 2; }
    else if ((b0 & 0xF0) == 0xE0) { c = b0 & 0x0F; n = 3; }
    else if ((b0 & 0xF8) == 0xF0) { c = b0 & 0x07; n = 4; }
    else return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const unsigned char b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      c = (c << 6) | (b & 0x3F);
    }
    static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < kMin[n] || c > CodePointSet::kMaxCodePoint || (c >= kSurrogateLo && c <= kSurrogateHi)) {
      return false;
    }
    out->push_back(c);
    i += n;
  }
  return true;
}

void AppendCodePointUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string JsonEscapeCodePoint(char32_t c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (c < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
    return buf;
  }
  std::string out;
  AppendCodePointUtf8(c, &out);
  return out;
}

std::string JsonStringCharsGbnf(const CodePointSet& set) {
  std::vector<std::string> alts;
  CodePointSet special = CodePointSet::Range(0, 0x1F);
  special.Add('"', '"');
  special.Add('\\', '\\');
  const CodePointSet raw = set.Minus(special);
  if (!raw.empty()) alts.push_back(raw.ToGbnf());
  // Quote, backslash and the controls with a short escape: one literal each.
  for (char32_t c : {U'"', U'\\', U'\b', U'\t', U'\n', U'\f', U'\r'}) {
    if (set.Contains(c)) alts.push_back(GbnfLiteral(JsonEscapeCodePoint(c)));
  }
  // Other controls as \u00XX, grouped by their second-to-last hex digit.
  for (char32_t high = 0; high < 2; ++high) {
    CodePointSet low_digits;
    for (char32_t low = 0; low < 16; ++low) {
      const char32_t c = high * 16 + low;
      if (c == '\b' || c == '\t' || c == '\n' || c == '\f' || c == '\r') continue;
      if (!set.Contains(c)) continue;
      if (low < 10) {
        low_digits.Add('0' + low, '0' + low);
      } else {
        low_digits.Add('a' + low - 10, 'a' + low - 10);
        low_digits.Add('A' + low - 10, 'A' + low - 10);
      }
    }
    if (!low_digits.empty()) {
      alts.push_back(GbnfLiteral(high == 0 ? "\\u000" : "\\u001") + " " + low_digits.ToGbnf());
    }
  }
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) {
    if (i > 0) out += " | ";
    out += alts[i];
  }
  out += ")";
  return out;
}

}  // namespace pagoda::grammar
