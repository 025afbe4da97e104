// GPT-2 byte-level mapping: every byte 0-255 is shown as a printable code
// point (printable Latin-1 bytes as themselves, the rest as U+0100 + n), so
// byte-level BPE vocabularies and merges are plain UTF-8 strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda {

// UTF-8 of the code point that stands for byte `b`.
std::string_view ByteToUnicode(uint8_t b);
// The byte a code point stands for, or -1 if it is not one of the 256.
int UnicodeToByte(uint32_t cp);
// Appends the mapped form of every byte of `raw`.
void ByteEncode(std::string_view raw, std::string* out);
// Inverse of ByteEncode; code points outside the mapping (and invalid UTF-8)
// are copied through unchanged.
void ByteDecode(std::string_view encoded, std::string* out);

}  // namespace pagoda
