// Grammar: a compiled context-free grammar over bytes, from llama.cpp's GBNF
// text form (docs/GRAMMAR.md). Immutable once compiled and shared between
// threads and sequences as shared_ptr<const Grammar>; the per-sequence state
// lives in GrammarMatcher (matcher.h) and TokenMatcher (token_matcher.h).
//
// Compiled form (what the matchers walk): every rule is a list of
// alternatives; an alternative is a run of elements in one flat array,
// closed by a kEnd element. An element either matches one byte out of a
// 256-bit set (kBytes), or refers to a rule (kRef). Character classes over
// code points become rules whose alternatives are UTF-8 byte-range
// sequences, so the grammar only ever produces valid UTF-8 where it uses
// classes or literals; repetitions become right-recursive helper rules.
// Alternatives that can never finish (an empty class, a rule with no finite
// derivation) are dropped at compile time, so every position a matcher can
// reach still has a way to accept: min_rest() is always finite.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::grammar {

// A set of byte values.
struct ByteSet {
  uint64_t bits[4] = {0, 0, 0, 0};
  bool Test(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void Set(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void SetRange(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) Set(static_cast<uint8_t>(b));
  }
  bool Empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
};

struct GrammarElement {
  enum Kind : uint8_t { kBytes, kRef, kEnd };
  Kind kind = kEnd;
  int32_t arg = 0;  // kBytes: index into byte_sets(); kRef: rule id; kEnd: the rule it closes
};

class Grammar {
 public:
  // Saturating "infinite" length (never returned by min_rest on a live position).
  static constexpr int32_t kInfinite = 1 << 29;

  int32_t n_rules() const { return static_cast<int32_t>(rule_names_.size()); }
  int32_t root() const { return root_; }
  const std::string& rule_name(int32_t rule) const { return rule_names_[rule]; }
  // Start positions (into elements()) of the rule's alternatives.
  std::span<const int32_t> alternatives(int32_t rule) const {
    return {alt_starts_.data() + alt_offsets_[rule], alt_starts_.data() + alt_offsets_[rule + 1]};
  }
  const GrammarElement& element(int32_t pos) const { return elements_[pos]; }
  int32_t n_elements() const { return static_cast<int32_t>(elements_.size()); }
  const ByteSet& byte_set(int32_t index) const { return byte_sets_[index]; }
  // Fewest bytes that complete the alternative from `pos` (an element of it,
  // or its kEnd: 0).
  int32_t min_rest(int32_t pos) const { return min_rest_[pos]; }
  // Fewest bytes of any string of `rule`.
  int32_t min_length(int32_t rule) const { return min_len_[rule]; }

  // A readable dump of the compiled rules (for tests and debugging).
  std::string Describe() const;

 private:
  friend class GrammarBuilder;
  Grammar() = default;

  std::vector<std::string> rule_names_;
  std::vector<int32_t> alt_offsets_;  // [n_rules + 1] into alt_starts_
  std::vector<int32_t> alt_starts_;
  std::vector<GrammarElement> elements_;
  std::vector<ByteSet> byte_sets_;
  std::vector<int32_t> min_rest_;     // [n_elements]
  std::vector<int32_t> min_len_;      // [n_rules]
  int32_t root_ = 0;
};

// Parses and compiles GBNF text; `root` names the start rule. Errors are
// InvalidArgument with a message saying what and where ("line 3, column 7:
// expected '::='"), including: undefined rule, left recursion (a rule that
// can reach itself without consuming a byte), a missing root rule, a
// repetition bound above the limit, a grammar too large, and "grammar
// admits no string" when the root cannot derive any finite string.
Result<std::shared_ptr<const Grammar>> CompileGbnf(std::string_view text, std::string_view root = "root");

}  // namespace pagoda::grammar
