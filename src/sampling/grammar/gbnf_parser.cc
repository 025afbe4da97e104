#include "sampling/grammar/gbnf_parser.h"

#include <cstring>

namespace pagoda::grammar {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Result<std::vector<GbnfRule>> Run() {
    std::vector<GbnfRule> rules;
    SkipSpace(true);
    while (!AtEnd()) {
      GbnfRule rule;
      Locate(p_, &rule.line, &rule.col);
      rule.name = ParseName();
      if (rule.name.empty()) return Error("expected a rule name");
      SkipSpace(false);
      if (s_.substr(p_, 3) != "::=") return Error("expected '::=' after rule name '" + rule.name + "'");
      p_ += 3;
      SkipSpace(true);
      if (!ParseAlternates(&rule.alts, false)) return error_;
      if (!AtEnd() && s_[p_] != '\n' && s_[p_] != '\r') {
        return Error(std::string("unexpected '") + s_[p_] + "'");
      }
      rules.push_back(std::move(rule));
      SkipSpace(true);
    }
    return rules;
  }

 private:
  bool AtEnd() const { return p_ >= s_.size(); }

  void Locate(size_t pos, int32_t* line, int32_t* col) const {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < pos && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++*line;
        *col = 1;
      } else {
        ++*col;
      }
    }
  }

  Status Error(const std::string& what) {
    return ErrorAt(p_, what);
  }
  Status ErrorAt(size_t pos, const std::string& what) {
    int32_t line, col;
    Locate(pos, &line, &col);
    error_ = InvalidArgument("grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
    return error_;
  }
  bool Fail(const std::string& what) {
    (void)Error(what);
    return false;
  }

  // Spaces, tabs and # comments; newlines too when newline_ok.
  void SkipSpace(bool newline_ok) {
    while (!AtEnd()) {
      const char c = s_[p_];
      if (c == ' ' || c == '\t') {
        ++p_;
      } else if (c == '#') {
        while (!AtEnd() && s_[p_] != '\n') ++p_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++p_;
      } else {
        break;
      }
    }
  }

  // At top level, a line that starts with '|' continues the alternatives.
  bool NextLineContinues() const {
    size_t q = p_;
    while (q < s_.size()) {
      const char c = s_[q];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++q;
      } else if (c == '#') {
        while (q < s_.size() && s_[q] != '\n') ++q;
      } else {
        return c == '|';
      }
    }
    return false;
  }

  std::string ParseName() {
    const size_t start = p_;
    while (!AtEnd() && IsNameChar(s_[p_])) ++p_;
    return std::string(s_.substr(start, p_ - start));
  }

  bool ParseAlternates(std::vector<GbnfAlt>* alts, bool nested) {
    for (;;) {
      GbnfAlt alt;
      if (!ParseSequence(&alt, nested)) return false;
      alts->push_back(std::move(alt));
      SkipSpace(nested);
      if (!nested && !AtEnd() && (s_[p_] == '\n' || s_[p_] == '\r') && NextLineContinues()) SkipSpace(true);
      if (AtEnd() || s_[p_] != '|') return true;
      ++p_;
      SkipSpace(true);
    }
  }

  bool ParseSequence(GbnfAlt* alt, bool nested) {
    for (;;) {
      SkipSpace(nested);
      if (AtEnd()) return true;
      const char c = s_[p_];
      if (c == '|' || c == ')' || c == '\n' || c == '\r') return true;
      GbnfItem item;
      Locate(p_, &item.line, &item.col);
      if (c == '"') {
        ++p_;
        item.kind = GbnfItem::kLiteral;
        while (!AtEnd() && s_[p_] != '"') {
          char32_t cp;
          if (!ParseChar(&cp, "string literal")) return false;
          item.literal.push_back(cp);
        }
        if (AtEnd()) return Fail("unterminated string literal");
        ++p_;
      } else if (c == '[') {
        ++p_;
        item.kind = GbnfItem::kClass;
        if (!AtEnd() && s_[p_] == '^') {
          item.negated = true;
          ++p_;
        }
        while (!AtEnd() && s_[p_] != ']') {
          char32_t lo, hi;
          if (!ParseChar(&lo, "character class")) return false;
          hi = lo;
          if (p_ + 1 < s_.size() && s_[p_] == '-' && s_[p_ + 1] != ']') {
            ++p_;
            if (!ParseChar(&hi, "character class")) return false;
            if (hi < lo) return Fail("character range is reversed (end below start)");
          }
          item.ranges.emplace_back(lo, hi);
        }
        if (AtEnd()) return Fail("unterminated character class");
        ++p_;
      } else if (c == '.') {
        ++p_;
        item.kind = GbnfItem::kClass;
        item.negated = true;  // [^] : any code point
      } else if (c == '(') {
        ++p_;
        item.kind = GbnfItem::kGroup;
        SkipSpace(true);
        if (!ParseAlternates(&item.group, true)) return false;
        SkipSpace(true);
        if (AtEnd() || s_[p_] != ')') return Fail("expected ')'");
        ++p_;
      } else if (IsNameChar(c)) {
        item.kind = GbnfItem::kRef;
        item.ref = ParseName();
        // A rule name followed by ::= here means the previous rule lacked a newline.
        size_t q = p_;
        while (q < s_.size() && (s_[q] == ' ' || s_[q] == '\t')) ++q;
        if (s_.substr(q, 3) == "::=") return Fail("expected a newline before the definition of '" + item.ref + "'");
      } else if (c == '<') {
        return Fail("token references (<...>) are not supported");
      } else {
        return Fail(std::string("unexpected '") + c + "'");
      }
      if (!ParseRepetitions(&item)) return false;
      alt->items.push_back(std::move(item));
    }
  }

  bool ParseRepetitions(GbnfItem* item) {
    for (;;) {
      if (AtEnd()) return true;
      int32_t lo = 0, hi = 0;
      const char c = s_[p_];
      if (c == '*') {
        lo = 0, hi = -1, ++p_;
      } else if (c == '+') {
        lo = 1, hi = -1, ++p_;
      } else if (c == '?') {
        lo = 0, hi = 1, ++p_;
      } else if (c == '{') {
        const size_t start = p_;
        ++p_;
        SkipSpace(false);
        int64_t m = 0, n = -1;
        const bool has_m = ParseInt(&m);
        SkipSpace(false);
        if (!AtEnd() && s_[p_] == ',') {
          ++p_;
          SkipSpace(false);
          int64_t v;
          if (ParseInt(&v)) n = v;
          SkipSpace(false);
        } else {
          if (!has_m) return Fail("expected a number in '{}'");
          n = m;
        }
        if (AtEnd() || s_[p_] != '}') return Fail("expected '}'");
        ++p_;
        if (m > kMaxRepetition || n > kMaxRepetition) {
          (void)ErrorAt(start, "repetition bound above the limit of " + std::to_string(kMaxRepetition));
          return false;
        }
        if (n >= 0 && n < m) {
          (void)ErrorAt(start, "repetition {m,n} has n < m");
          return false;
        }
        lo = static_cast<int32_t>(m);
        hi = static_cast<int32_t>(n);
      } else {
        return true;
      }
      if (item->min_rep != 1 || item->max_rep != 1) {
        // Stacked repetition (a*?): wrap what we have in a group.
        GbnfItem inner = std::move(*item);
        GbnfItem outer;
        outer.kind = GbnfItem::kGroup;
        outer.line = inner.line;
        outer.col = inner.col;
        outer.group.push_back(GbnfAlt{});
        outer.group[0].items.push_back(std::move(inner));
        *item = std::move(outer);
      }
      item->min_rep = lo;
      item->max_rep = hi;
    }
  }

  bool ParseInt(int64_t* out) {
    const size_t start = p_;
    int64_t v = 0;
    while (!AtEnd() && s_[p_] >= '0' && s_[p_] <= '9') {
      if (v < (int64_t{1} << 40)) v = v * 10 + (s_[p_] - '0');
      ++p_;
    }
    *out = v;
    return p_ > start;
  }

  // One character of a literal or class: an escape or one UTF-8 code point.
  bool ParseChar(char32_t* out, const char* where) {
    const unsigned char c = static_cast<unsigned char>(s_[p_]);
    if (c == '\\') {
      if (p_ + 1 >= s_.size()) return Fail(std::string("unterminated escape in ") + where);
      const char e = s_[p_ + 1];
      p_ += 2;
      switch (e) {
        case 'n': *out = '\n'; return true;
        case 'r': *out = '\r'; return true;
        case 't': *out = '\t'; return true;
        case '0': *out = 0; return true;
        case '\\': case '"': case '[': case ']': case '-': case '^': case '\'': case '.': case '/':
        case '(': case ')': case '|': case '*': case '+': case '?': case '{': case '}':
          *out = static_cast<char32_t>(e);
          return true;
        case 'x': return ParseHex(2, out);
        case 'u': return ParseHex(4, out);
        case 'U': return ParseHex(8, out);
        default:
          p_ -= 2;
          return Fail(std::string("unknown escape '\\") + e + "' in " + where);
      }
    }
    if (c < 0x80) {
      if (c == '\n' || c == '\r') return Fail(std::string("newline inside ") + where);
      *out = c;
      ++p_;
      return true;
    }
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || c >= 0xF8 || p_ + static_cast<size_t>(len) > s_.size()) return Fail("invalid UTF-8 in the grammar text");
    char32_t cp = c & (0x7F >> len);
    for (int i = 1; i < len; ++i) {
      const unsigned char d = static_cast<unsigned char>(s_[p_ + static_cast<size_t>(i)]);
      if ((d & 0xC0) != 0x80) return Fail("invalid UTF-8 in the grammar text");
      cp = (cp << 6) | (d & 0x3F);
    }
    p_ += static_cast<size_t>(len);
    *out = cp;
    return true;
  }

  bool ParseHex(int digits, char32_t* out) {
    char32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = AtEnd() ? -1 : HexValue(s_[p_]);
      if (h < 0) return Fail("expected " + std::to_string(digits) + " hex digits after the escape");
      v = v * 16 + static_cast<char32_t>(h);
      ++p_;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return Fail("escape is not a Unicode scalar value");
    *out = v;
    return true;
  }

  std::string_view s_;
  size_t p_ = 0;
  Status error_;
};

}  // namespace

Result<std::vector<GbnfRule>> ParseGbnf(std::string_view text) { return Parser(text).Run(); }

}  // namespace pagoda::grammar
