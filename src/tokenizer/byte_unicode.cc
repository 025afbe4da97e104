#include "tokenizer/byte_unicode.h"

#include <array>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

struct ByteTables {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 324> cp_to_byte{};  // every mapped code point is < 256 + 68

  ByteTables() {
    cp_to_byte.fill(-1);
    uint32_t extra = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? b : 256 + extra++;
      byte_to_cp[b] = cp;
      utf8::Append(&byte_to_utf8[b], cp);
      cp_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& Tables() {
  static const ByteTables kTables;
  return kTables;
}

}  // namespace

std::string_view ByteToUnicode(uint8_t b) { return Tables().byte_to_utf8[b]; }

int UnicodeToByte(uint32_t cp) {
  const auto& t = Tables();
  return cp < t.cp_to_byte.size() ? t.cp_to_byte[cp] : -1;
}

void ByteEncode(std::string_view raw, std::string* out) {
  const auto& t = Tables();
  for (char c : raw) out->append(t.byte_to_utf8[static_cast<uint8_t>(c)]);
}

void ByteDecode(std::string_view encoded, std::string* out) {
  size_t i = 0;
  while (i < encoded.size()) {
    const size_t n = utf8::ValidSeqLen(encoded, i);
    if (n == 0) {
      out->push_back(encoded[i++]);
      continue;
    }
    const int b = UnicodeToByte(utf8::DecodeAt(encoded, i, n));
    if (b >= 0) {
      out->push_back(static_cast<char>(b));
    } else {
      out->append(encoded.data() + i, n);
    }
    i += n;
  }
}

}  // namespace pagoda
