// Whitespace handling, comments, raw blocks and string literals, observed
// through rendering (trim_blocks and lstrip_blocks on, as transformers).
#include "tokenizer/jinja/lexer.h"

#include <gtest/gtest.h>

#include "tokenizer/jinja/render_util.h"

namespace pagoda::jinja {
namespace {

using jinja_test::IsError;
using jinja_test::Render;

TEST(LexerTest, MinusStripsWhitespaceOnThatSide) {
  EXPECT_EQ(Render("a  \n {{- 'b' -}} \n  c"), "abc");
  EXPECT_EQ(Render("a  {{ 'b' -}}  c"), "a  bc");
  EXPECT_EQ(Render("a \n {%- if true %}b{% endif -%}\n c"), "abc");
}

TEST(LexerTest, TrimBlocksDropsTheNewlineAfterABlockTag) {
  EXPECT_EQ(Render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
  // Not after an expression tag.
  EXPECT_EQ(Render("{{ 'a' }}\nb"), "a\nb");
}

TEST(LexerTest, LstripBlocksDropsIndentBeforeABlockTag) {
  EXPECT_EQ(Render("  {% if true %}\n    x\n  {% endif %}\n"), "    x\n");
  // Only from the start of a line; expression tags keep their indent.
  EXPECT_EQ(Render("a  {% if true %}b{% endif %}"), "a  b");
  EXPECT_EQ(Render("  {{ 'x' }}"), "  x");
}

TEST(LexerTest, DropsOneTrailingNewline) {
  EXPECT_EQ(Render("x\n"), "x");
  EXPECT_EQ(Render("x\n\n"), "x\n");
}

TEST(LexerTest, CommentsVanishWithWhitespaceControl) {
  EXPECT_EQ(Render("a{# note #}b"), "ab");
  EXPECT_EQ(Render("a \n{#- note -#}\n b"), "ab");
  EXPECT_EQ(Render("  {# note #}\nb"), "b");
}

TEST(LexerTest, RawBlockKeepsTagsAsText) {
  EXPECT_EQ(Render("{% raw %}{{ x }}{% if %}{% endraw %}"), "{{ x }}{% if %}");
  EXPECT_EQ(Render("a {%- raw -%}  {{ y }}  {%- endraw -%} b"), "a{{ y }}b");
}

TEST(LexerTest, StringEscapes) {
  EXPECT_EQ(Render(R"({{ 'a\nb\t\'c\' \"d\" \\ \u00e9 \x41' }})"), "a\nb\t'c' \"d\" \\ \xC3\xA9 A");
  EXPECT_EQ(Render(R"({{ "it's" ~ 'x' 'y' }})"), "it'sxy");  // adjacent literals concatenate
  EXPECT_EQ(Render(R"({{ '\q' }})"), "\\q");                 // unknown escape kept, as Python
}

TEST(LexerTest, DictLiteralBracesDoNotCloseTheTag) {
  EXPECT_EQ(Render("{{ {'a': {'b': 1}} | tojson }}"), "{\"a\": {\"b\": 1}}");
}

TEST(LexerTest, ReportsUnterminatedTagsAndStrings) {
  EXPECT_TRUE(IsError(Render("{{ 'abc }}")));
  EXPECT_TRUE(IsError(Render("{{ x ")));
  EXPECT_TRUE(IsError(Render("{% if x ")));
  EXPECT_TRUE(IsError(Render("{# no end")));
  EXPECT_TRUE(IsError(Render("{% raw %} no end")));
  EXPECT_TRUE(IsError(Render("{{ x ? y }}")));
  const std::string err = Render("line1\nline2 {{ 'abc }}");
  EXPECT_NE(err.find("line 2"), std::string::npos) << err;
}

TEST(LexerTest, TokenizesNumbersAndOperators) {
  const auto toks = Tokenize("{{ 1.5e3 // 2 ** x_1 }}");
  ASSERT_EQ(toks.size(), 8u);
  EXPECT_EQ(toks[1].type, Token::Type::kFloat);
  EXPECT_EQ(toks[2].text, "//");
  EXPECT_EQ(toks[3].type, Token::Type::kInt);
  EXPECT_EQ(toks[4].text, "**");
  EXPECT_EQ(toks[5].text, "x_1");
  EXPECT_EQ(toks[7].type, Token::Type::kEof);
}

}  // namespace
}  // namespace pagoda::jinja
