// CodePointSet: a set of Unicode scalar values (surrogates excluded) kept as
// sorted disjoint ranges, and the GBNF text that writes it. Shared by the
// regex and JSON Schema converters, which emit grammar text only; a value type
// with no shared state, usable from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::grammar {

struct CodePointRange {
  char32_t lo;
  char32_t hi;  // inclusive
};

class CodePointSet {
 public:
  static constexpr char32_t kMaxCodePoint = 0x10FFFF;

  CodePointSet() = default;
  static CodePointSet Of(char32_t c) { return Range(c, c); }
  static CodePointSet Range(char32_t lo, char32_t hi);
  // Every scalar value: [0, 0xD7FF] and [0xE000, 0x10FFFF].
  static CodePointSet All();

  void Add(char32_t lo, char32_t hi);
  void Add(const CodePointSet& other);
  CodePointSet Complement() const;  // relative to All()
  CodePointSet Minus(const CodePointSet& other) const;
  CodePointSet Intersect(const CodePointSet& other) const;
  bool Contains(char32_t c) const;
  bool empty() const { return ranges_.empty(); }
  bool IsSingle() const { return ranges_.size() == 1 && ranges_[0].lo == ranges_[0].hi; }
  const std::vector<CodePointRange>& ranges() const { return ranges_; }

  // "[a-z0-9]" (always the positive form, so a matcher never has to decide
  // what a negated class means for surrogates). Must not be empty.
  std::string ToGbnf() const;

 private:
  std::vector<CodePointRange> ranges_;  // sorted, disjoint, non-adjacent
};

// One code point as written inside a GBNF literal ("...") or class ([...]):
// printable ASCII as itself where safe, everything else as \xHH / \uHHHH /
// \UHHHHHHHH.
std::string GbnfEscapeCodePoint(char32_t c, bool in_class);
// A GBNF string literal for UTF-8 text, quotes included. Invalid UTF-8 bytes
// are written as \xHH.
std::string GbnfLiteral(std::string_view utf8);

// Decodes UTF-8 into code points; false on malformed input (overlong forms,
// surrogates, truncation).
bool DecodeUtf8(std::string_view s, std::u32string* out);
void AppendCodePointUtf8(char32_t c, std::string* out);

// The JSON encoding, inside a string literal, of the code point c: itself,
// or \" \\ \n ... \u00XX for the characters JSON requires escaped.
std::string JsonEscapeCodePoint(char32_t c);

// A GBNF expression that matches the JSON string-content encoding of exactly
// one member of `set` (raw characters, plus the escapes for quote, backslash
// and control characters that are members). `set` must not be empty.
std::string JsonStringCharsGbnf(const CodePointSet& set);

}  // namespace pagoda::grammar
