#include "tokenizer/utf8.h"

namespace pagoda::utf8 {
namespace {

inline bool IsCont(uint8_t b) { return (b & 0xC0) == 0x80; }

// Expected sequence length for a lead byte, 0 for bytes that cannot start one.
inline size_t LeadLen(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

// Valid range of the second byte for a lead byte (RFC 3629 table).
inline bool SecondOk(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return IsCont(b);
  }
}

}  // namespace

size_t ValidSeqLen(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  const auto lead = static_cast<uint8_t>(s[i]);
  const size_t n = LeadLen(lead);
  if (n <= 1) return n;
  if (i + n > s.size()) return 0;
  if (!SecondOk(lead, static_cast<uint8_t>(s[i + 1]))) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (!IsCont(static_cast<uint8_t>(s[i + k]))) return 0;
  }
  return n;
}

uint32_t DecodeAt(std::string_view s, size_t i, size_t len) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  switch (len) {
    case 1: return b0;
    case 2: return ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(s[i + 1]) & 0x3Fu);
    case 3:
      return ((b0 & 0x0Fu) << 12) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 6) |
             (static_cast<uint8_t>(s[i + 2]) & 0x3Fu);
    default:
      return ((b0 & 0x07u) << 18) | ((static_cast<uint8_t>(s[i + 1]) & 0x3Fu) << 12) |
             ((static_cast<uint8_t>(s[i + 2]) & 0x3Fu) << 6) | (static_cast<uint8_t>(s[i + 3]) & 0x3Fu);
  }
}

void Append(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t IncompleteTail(std::string_view s) {
  // A pending sequence is at most 3 bytes long: look for its lead byte.
  const size_t max_back = s.size() < 3 ? s.size() : 3;
  for (size_t back = 1; back <= max_back; ++back) {
    const size_t start = s.size() - back;
    const auto lead = static_cast<uint8_t>(s[start]);
    if (IsCont(lead)) continue;
    const size_t need = LeadLen(lead);
    if (need <= back) return 0;  // ASCII, invalid lead, or already complete
    if (back >= 2 && !SecondOk(lead, static_cast<uint8_t>(s[start + 1]))) return 0;
    for (size_t k = 2; k < back; ++k) {
      if (!IsCont(static_cast<uint8_t>(s[start + k]))) return 0;
    }
    return back;
  }
  return 0;
}

void AppendSanitized(std::string* out, std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = ValidSeqLen(s, i);
    if (n == 0) {
      out->append("\xEF\xBF\xBD");
      ++i;
    } else {
      out->append(s.data() + i, n);
      i += n;
    }
  }
}

bool IsValid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = ValidSeqLen(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace pagoda::utf8
