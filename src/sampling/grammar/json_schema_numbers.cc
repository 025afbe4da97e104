#include "sampling/grammar/json_schema_numbers.h"

#include <algorithm>
#include <vector>

namespace pagoda::grammar {

namespace {

std::string Alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

std::string DigitClass(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string AnyDigits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(n) + "}";
}

std::string Join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Digit strings of equal length, a <= b: every string of that length between
// them (leading zeros are the caller's business).
std::string SameLength(const std::string& a, const std::string& b) {
  if (a == b) return "\"" + a + "\"";
  size_t common = 0;
  while (a[common] == b[common]) ++common;
  std::string prefix;
  if (common > 0) prefix.append(1, '"').append(a, 0, common).append(1, '"');
  const std::string ra = a.substr(common + 1), rb = b.substr(common + 1);
  const char a0 = a[common], b0 = b[common];
  const bool low_full = ra.find_first_not_of('0') == std::string::npos;
  const bool high_full = rb.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> alts;
  if (!low_full) alts.push_back(Join(std::string("\"") + a0 + "\"", SameLength(ra, std::string(ra.size(), '9'))));
  const char mid_lo = low_full ? a0 : static_cast<char>(a0 + 1);
  const char mid_hi = high_full ? b0 : static_cast<char>(b0 - 1);
  if (mid_lo <= mid_hi) alts.push_back(Join(DigitClass(mid_lo, mid_hi), AnyDigits(ra.size())));
  if (!high_full) alts.push_back(Join(std::string("\"") + b0 + "\"", SameLength(std::string(rb.size(), '0'), rb)));
  return Join(prefix, Alternatives(alts));
}

// Smallest canonical number with n digits.
std::string Smallest(size_t n) {
  std::string s(n, '0');
  if (n > 1) s[0] = '1';
  return s;
}

enum class Fraction { kAny, kZero, kNonZero, kNone };

Fraction Intersect(Fraction a, Fraction b) {
  if (a == Fraction::kNone || b == Fraction::kNone) return Fraction::kNone;
  if (a == Fraction::kAny) return b;
  if (b == Fraction::kAny) return a;
  if (a == b) return a;
  return Fraction::kNone;  // zero and non-zero
}

std::string FractionGbnf(Fraction f) {
  switch (f) {
    case Fraction::kAny: return "(\".\" [0-9]{1," + std::to_string(kMaxIntegerDigits) + "})?";
    case Fraction::kNonZero: return "\".\" [0-9]{0," + std::to_string(kMaxIntegerDigits - 1) + "} [1-9]";
    default: return "";
  }
}

// Magnitudes y = I + f (f the fraction) with lower <= y (or <) and y <= upper
// (or <), all bounds >= 0, as alternatives "integer-part fraction".
std::vector<std::string> MagnitudePieces(NumberBound lower, std::optional<NumberBound> upper) {
  struct Piece {
    uint64_t lo;
    std::optional<uint64_t> hi;
    Fraction frac;
  };
  const uint64_t l = static_cast<uint64_t>(lower.value);
  const Fraction at_low = lower.exclusive ? Fraction::kNonZero : Fraction::kAny;
  std::vector<Piece> pieces;
  if (!upper) {
    pieces.push_back({l, l, at_low});
    pieces.push_back({l + 1, std::nullopt, Fraction::kAny});
  } else {
    const uint64_t u = static_cast<uint64_t>(upper->value);
    const Fraction at_high = upper->exclusive ? Fraction::kNone : Fraction::kZero;
    if (l > u) return {};
    if (l == u) {
      pieces.push_back({l, l, Intersect(at_low, at_high)});
    } else {
      pieces.push_back({l, l, at_low});
      if (l + 1 <= u - 1) pieces.push_back({l + 1, u - 1, Fraction::kAny});
      pieces.push_back({u, u, at_high});
    }
  }
  std::vector<std::string> out;
  for (const auto& p : pieces) {
    if (p.frac == Fraction::kNone) continue;
    out.push_back(Join(UnsignedRangeGbnf(p.lo, p.hi), FractionGbnf(p.frac)));
  }
  return out;
}

}  // namespace

std::string UnsignedRangeGbnf(uint64_t lo, std::optional<uint64_t> hi) {
  const std::string a = std::to_string(lo);
  std::vector<std::string> alts;
  if (hi) {
    const std::string b = std::to_string(*hi);
    for (size_t n = a.size(); n <= b.size(); ++n) {
      const std::string from = n == a.size() ? a : Smallest(n);
      const std::string to = n == b.size() ? b : std::string(n, '9');
      alts.push_back(SameLength(from, to));
    }
    return Alternatives(alts);
  }
  alts.push_back(SameLength(a, std::string(a.size(), '9')));
  const size_t max_digits = std::max<size_t>(kMaxIntegerDigits, a.size());
  if (max_digits > a.size()) {
    alts.push_back("[1-9] [0-9]{" + std::to_string(a.size()) + "," + std::to_string(max_digits - 1) + "}");
  }
  return Alternatives(alts);
}

std::optional<std::string> IntegerRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) return std::nullopt;
  std::vector<std::string> alts;
  if (!hi || *hi >= 0) {
    const uint64_t from = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
    std::optional<uint64_t> to;
    if (hi) to = static_cast<uint64_t>(*hi);
    alts.push_back(UnsignedRangeGbnf(from, to));
  }
  if (!lo || *lo < 0) {
    const uint64_t from = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
    std::optional<uint64_t> to;
    if (lo) to = static_cast<uint64_t>(-*lo);
    alts.push_back("\"-\" " + UnsignedRangeGbnf(from, to));
  }
  return Alternatives(alts);
}

std::optional<std::string> NumberRangeGbnf(std::optional<NumberBound> lo,
                                           std::optional<NumberBound> hi) {
  std::vector<std::string> alts;
  if (!hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive)) {
    const NumberBound lower = lo && lo->value >= 0 ? *lo : NumberBound{0, false};
    for (auto& p : MagnitudePieces(lower, hi)) alts.push_back(std::move(p));
  }
  if (!lo || lo->value < 0) {
    // Negative numbers as "-" and a magnitude y > 0; zero is left to the
    // positive side, so "-0" is never produced.
    const NumberBound lower = !hi || hi->value >= 0 ? NumberBound{0, true}
                                                    : NumberBound{-hi->value, hi->exclusive};
    std::optional<NumberBound> upper;
    if (lo) upper = NumberBound{-lo->value, lo->exclusive};
    for (auto& p : MagnitudePieces(lower, upper)) alts.push_back("\"-\" " + p);
  }
  if (alts.empty()) return std::nullopt;
  return Alternatives(alts);
}

}  // namespace pagoda::grammar
