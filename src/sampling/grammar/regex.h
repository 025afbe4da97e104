// Regular expression (a documented subset, docs/STRUCTURED_OUTPUTS.md) to GBNF
// text. Used for the `regex` request field and for JSON Schema `pattern`.
// Pure text generation: no state, callable from any thread.
//
// Subset: literals; escapes \d \w \s \D \W \S \t \n \r \f \v \0 \xHH \uHHHH
// \u{H...} and escaped syntax characters; classes [...] with ranges, negation
// and class escapes; `.` (any character except the line terminators \n \r
// U+2028 U+2029, as JavaScript); groups ( ), (?: ), (?<name> ); alternation;
// quantifiers * + ? {m} {m,} {m,n} (a lazy `?` suffix is accepted: it does not
// change which strings match); anchors ^ and $ only at the start and end of a
// top-level alternative. Anything else (backreferences, lookaround, \b, \p{..},
// inline flags, possessive quantifiers) is InvalidArgument naming the construct.
// Semantics are JavaScript's with the `u` flag (what ajv uses for `pattern`).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace pagoda::grammar {

// A whole grammar whose rule `root_name` matches exactly the strings the
// regex matches in full (^ and $ are implied; written ones are accepted).
Result<std::string> RegexToGbnf(std::string_view regex, std::string_view root_name = "root");

enum class RegexMatchMode {
  kFullMatch,  // the string must match the regex as a whole (the `regex` field)
  kSearch,     // the regex may match anywhere unless anchored (JSON Schema `pattern`)
};

enum class RegexTextMode {
  kRaw,         // the grammar produces the characters themselves
  kJsonString,  // the grammar produces their JSON string-content encoding
};

// One GBNF expression (no rule definitions, no surrounding quotes) for the
// regex under the given modes. Repetition bounds above kMaxRegexRepeat are
// rejected so a pattern cannot expand into an enormous grammar.
inline constexpr int kMaxRegexRepeat = 1000;
Result<std::string> RegexToGbnfExpression(std::string_view regex, RegexMatchMode match,
                                          RegexTextMode text);

}  // namespace pagoda::grammar
