#include "sampling/grammar/utf8_ranges.h"

#include <algorithm>

namespace pagoda::grammar {
namespace {

constexpr char32_t kMaxCp = 0x10FFFF;

int EncodedLength(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void Encode(char32_t cp, uint8_t* out) {
  switch (EncodedLength(cp)) {
    case 1: out[0] = static_cast<uint8_t>(cp); break;
    case 2:
      out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
      out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    case 3:
      out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    default:
      out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
      out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
      out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
  }
}

// Russ Cox's split: cut [lo, hi] until lo and hi have the same encoded
// length and differ only in a way that each byte position forms one range.
void Split(char32_t lo, char32_t hi, std::vector<std::vector<ByteRange>>* out) {
  if (lo > hi) return;
  for (char32_t b : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= b && b < hi) {
      Split(lo, b, out);
      Split(b + 1, hi, out);
      return;
    }
  }
  const int n = EncodedLength(lo);
  for (int i = 1; i < n; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Split(lo, lo | m, out);
        Split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Split(lo, (hi & ~m) - 1, out);
        Split(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  Encode(lo, a);
  Encode(hi, b);
  std::vector<ByteRange> seq;
  for (int i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
  out->push_back(std::move(seq));
}

}  // namespace

CodePointRanges NormalizeClass(const CodePointRanges& ranges, bool negated) {
  CodePointRanges r;
  for (auto [lo, hi] : ranges) {
    if (lo > kMaxCp) continue;
    r.emplace_back(lo, std::min(hi, kMaxCp));
  }
  std::sort(r.begin(), r.end());
  CodePointRanges merged;
  for (auto [lo, hi] : r) {
    if (!merged.empty() && lo <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.emplace_back(lo, hi);
    }
  }
  if (negated) {
    CodePointRanges comp;
    char32_t next = 0;
    for (auto [lo, hi] : merged) {
      if (lo > next) comp.emplace_back(next, lo - 1);
      next = hi + 1;
    }
    if (next <= kMaxCp) comp.emplace_back(next, kMaxCp);
    merged = std::move(comp);
  }
  // Remove surrogates.
  CodePointRanges out;
  for (auto [lo, hi] : merged) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.emplace_back(lo, hi);
      continue;
    }
    if (lo < 0xD800) out.emplace_back(lo, 0xD7FF);
    if (hi > 0xDFFF) out.emplace_back(0xE000, hi);
  }
  return out;
}

std::vector<std::vector<ByteRange>> Utf8Sequences(const CodePointRanges& normalized) {
  std::vector<std::vector<ByteRange>> out;
  for (auto [lo, hi] : normalized) Split(lo, hi, &out);
  return out;
}

void EncodeUtf8To(char32_t cp, std::string* out) {
  uint8_t b[4];
  Encode(cp, b);
  out->append(reinterpret_cast<const char*>(b), static_cast<size_t>(EncodedLength(cp)));
}

}  // namespace pagoda::grammar
