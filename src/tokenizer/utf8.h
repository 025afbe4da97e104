// UTF-8 helpers shared by the tokenizers and the streaming decoder. All of
// them accept arbitrary bytes: invalid sequences are reported, never trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::utf8 {

// Length of the valid UTF-8 sequence starting at s[i] (1-4), or 0 when the
// bytes there are not a complete, well-formed sequence (overlongs, surrogates
// and code points above U+10FFFF are rejected).
size_t ValidSeqLen(std::string_view s, size_t i);

// Length of the next "character" for splitting: the valid sequence length, or
// 1 for an invalid byte, so every invalid byte becomes its own unit.
inline size_t CharLen(std::string_view s, size_t i) {
  const size_t n = ValidSeqLen(s, i);
  return n == 0 ? 1 : n;
}

// Code point of the valid sequence of length `len` at s[i].
uint32_t DecodeAt(std::string_view s, size_t i, size_t len);

void Append(std::string* out, uint32_t cp);

// Number of trailing bytes that form a proper prefix of a valid sequence, i.e.
// bytes that a later chunk could still complete (0-3).
size_t IncompleteTail(std::string_view s);

// Appends s with each byte that is not part of a valid sequence replaced by
// U+FFFD.
void AppendSanitized(std::string* out, std::string_view s);

bool IsValid(std::string_view s);

}  // namespace pagoda::utf8
