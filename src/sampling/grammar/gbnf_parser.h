// GBNF text -> syntax tree (rules of alternatives of items), before
// compilation (grammar_builder). Literals and classes are in code points;
// positions are kept for error messages. Internal to sampling/grammar.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace pagoda::grammar {

struct GbnfItem;

struct GbnfAlt {
  std::vector<GbnfItem> items;
};

struct GbnfItem {
  enum Kind { kLiteral, kClass, kRef, kGroup };
  Kind kind = kLiteral;
  std::u32string literal;                           // kLiteral (may be empty)
  std::vector<std::pair<char32_t, char32_t>> ranges;  // kClass, inclusive; '.' is [^] with negated
  bool negated = false;
  std::string ref;                                  // kRef
  std::vector<GbnfAlt> group;                       // kGroup
  int32_t min_rep = 1;
  int32_t max_rep = 1;  // -1 = unbounded
  int32_t line = 0, col = 0;
};

struct GbnfRule {
  std::string name;
  std::vector<GbnfAlt> alts;
  int32_t line = 0, col = 0;
};

// Largest m or n accepted in {m,n}.
inline constexpr int32_t kMaxRepetition = 10000;

// Errors: InvalidArgument "line L, column C: ...".
Result<std::vector<GbnfRule>> ParseGbnf(std::string_view text);

}  // namespace pagoda::grammar
