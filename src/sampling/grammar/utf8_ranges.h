// Code point sets -> UTF-8 byte-range sequences: the byte-level form of a
// GBNF character class. Internal to sampling/grammar.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pagoda::grammar {

using CodePointRanges = std::vector<std::pair<char32_t, char32_t>>;  // inclusive

// Sorted, merged ranges of `ranges` (or of their complement over the Unicode
// scalar values when negated). Surrogates D800-DFFF are never included.
CodePointRanges NormalizeClass(const CodePointRanges& ranges, bool negated);

// One sequence of inclusive byte ranges per UTF-8 encoding shape: a string
// matches the class iff it matches one sequence. Covers exactly the given
// code points (no overlong forms, no surrogates).
struct ByteRange {
  uint8_t lo, hi;
};
std::vector<std::vector<ByteRange>> Utf8Sequences(const CodePointRanges& normalized);

// UTF-8 encoding of one code point.
void EncodeUtf8To(char32_t cp, std::string* out);

}  // namespace pagoda::grammar
