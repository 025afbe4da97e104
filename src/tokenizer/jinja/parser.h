// Parser: tokens to a Program, with Jinja's operator precedence (filters and
// `is` tests bind tighter than arithmetic: `messages|length - 1` is
// `(messages|length) - 1`; `not x is defined` is `not (x is defined)`).
#pragma once

#include <memory>
#include <string_view>

#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace pagoda::jinja {

// Throws JinjaError with the line on a syntax error, an unknown statement, an
// unclosed block or nesting deeper than kMaxParseDepth.
std::unique_ptr<Program> ParseTemplate(std::string_view source, const LexOptions& options = {});

inline constexpr int kMaxParseDepth = 200;

}  // namespace pagoda::jinja
