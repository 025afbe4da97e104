// GBNF for JSON numbers within bounds: exact digit-range grammars for
// integers, and numbers with integer-valued bounds. Internal to the JSON
// Schema converter; pure functions, any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pagoda::grammar {

// Unbounded integers and integer parts have at most this many digits (as
// llama.cpp), so outputs cannot run on forever; a bound with more digits
// raises the limit to its own length.
inline constexpr int kMaxIntegerDigits = 16;
// Bounds must lie within +-kMaxBoundMagnitude.
inline constexpr int64_t kMaxBoundMagnitude = 1'000'000'000'000'000'000;  // 1e18

struct NumberBound {
  int64_t value = 0;
  bool exclusive = false;
};

// Canonical decimal digits (no sign, no leading zeros) of the integers in
// [lo, hi]; hi unset: up to max(kMaxIntegerDigits, digits of lo) digits.
// Requires lo <= hi.
std::string UnsignedRangeGbnf(uint64_t lo, std::optional<uint64_t> hi);

// A JSON integer in [lo, hi] (either side optional). nullopt when empty.
std::optional<std::string> IntegerRangeGbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

// A JSON number (integer part, optional fraction, no exponent) within the
// bounds. nullopt when no number satisfies them.
std::optional<std::string> NumberRangeGbnf(std::optional<NumberBound> lo,
                                           std::optional<NumberBound> hi);

}  // namespace pagoda::grammar
