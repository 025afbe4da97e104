// Lexer: template source to tokens. Text between tags becomes kText with the
// whitespace rules already applied ({%- -%} trimming, and trim_blocks plus
// lstrip_blocks, both on as transformers renders chat templates). Comments
// vanish; {% raw %} bodies become text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja {

struct Token {
  enum class Type { kText, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEof };
  Type type;
  std::string text;  // kString: the decoded value
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;    // drop the first newline after a block or comment tag
  bool lstrip_blocks = true;  // drop spaces/tabs from line start up to a block or comment tag
};

// Throws JinjaError on a malformed template (unterminated tag or string,
// unexpected character).
std::vector<Token> Tokenize(std::string_view source, const LexOptions& options = {});

}  // namespace pagoda::jinja
