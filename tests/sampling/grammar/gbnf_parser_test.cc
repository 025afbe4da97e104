// GBNF parse and compile errors: each names what is wrong and where.
#include <gtest/gtest.h>

#include "sampling/grammar/grammar.h"

namespace pagoda::grammar {
namespace {

std::string CompileError(std::string_view text, std::string_view root = "root") {
  auto g = CompileGbnf(text, root);
  EXPECT_FALSE(g.ok()) << text;
  if (g.ok()) return "";
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  return g.status().message();
}

TEST(GbnfParserTest, ReportsLineAndColumn) {
  EXPECT_EQ(CompileError("root ::= \"a\"\nitem = \"b\"\n"),
            "grammar: line 2, column 6: expected '::=' after rule name 'item'");
  EXPECT_EQ(CompileError("root ::= \"abc\n"), "grammar: line 1, column 14: newline inside string literal");
  EXPECT_EQ(CompileError("root ::= \"abc"), "grammar: line 1, column 14: unterminated string literal");
  EXPECT_EQ(CompileError("root ::= [a-z"), "grammar: line 1, column 14: unterminated character class");
  EXPECT_EQ(CompileError("root ::= ( \"a\" "), "grammar: line 1, column 16: expected ')'");
  EXPECT_EQ(CompileError("root ::= \"a\" )"), "grammar: line 1, column 14: unexpected ')'");
  EXPECT_EQ(CompileError("root ::= [z-a]"), "grammar: line 1, column 14: character range is reversed (end below start)");
  EXPECT_EQ(CompileError("root ::= \"\\q\""), "grammar: line 1, column 11: unknown escape '\\q' in string literal");
  EXPECT_EQ(CompileError("root ::= \"\\x4\""), "grammar: line 1, column 14: expected 2 hex digits after the escape");
  EXPECT_EQ(CompileError("root ::= \"\\uD800\""), "grammar: line 1, column 17: escape is not a Unicode scalar value");
  EXPECT_EQ(CompileError("root ::= \"a\" @"), "grammar: line 1, column 14: unexpected '@'");
  EXPECT_EQ(CompileError("root ::= <think>"), "grammar: line 1, column 10: token references (<...>) are not supported");
}

TEST(GbnfParserTest, ReportsUndefinedAndDuplicateRules) {
  EXPECT_EQ(CompileError("root ::= item\n"), "grammar: line 1, column 10: undefined rule 'item'");
  EXPECT_EQ(CompileError("root ::= \"a\"\n  other ::= x\n"), "grammar: line 2, column 13: undefined rule 'x'");
  EXPECT_EQ(CompileError("root ::= \"a\"\nroot ::= \"b\"\n"), "grammar: line 2, column 1: rule 'root' is defined twice");
}

TEST(GbnfParserTest, ReportsMissingRootAndEmptyText) {
  EXPECT_EQ(CompileError("item ::= \"a\"\n"), "grammar: no rule named 'root' (the start rule)");
  EXPECT_EQ(CompileError("root ::= \"a\"\n", "start"), "grammar: no rule named 'start' (the start rule)");
  EXPECT_EQ(CompileError(""), "grammar: no rules (the text is empty)");
  EXPECT_EQ(CompileError("# only a comment\n"), "grammar: no rules (the text is empty)");
}

TEST(GbnfParserTest, ReportsLeftRecursion) {
  EXPECT_EQ(CompileError("root ::= root \"a\" | \"b\"\n"),
            "grammar: left recursion (a rule reaches itself before consuming any byte): root -> root");
  EXPECT_EQ(CompileError("root ::= expr\nexpr ::= term | expr \"+\" term\nterm ::= [0-9]\n"),
            "grammar: left recursion (a rule reaches itself before consuming any byte): expr -> expr");
  // Through a nullable prefix.
  EXPECT_EQ(CompileError("root ::= a\na ::= b a \"x\" | \"y\"\nb ::= \"z\"?\n"),
            "grammar: left recursion (a rule reaches itself before consuming any byte): a -> a");
  EXPECT_EQ(CompileError("root ::= a\na ::= b | \"x\"\nb ::= a \"y\"\n"),
            "grammar: left recursion (a rule reaches itself before consuming any byte): b -> a -> b");
  // Cycles of references in tail position push no stack frame: fine.
  EXPECT_TRUE(CompileGbnf("root ::= a\na ::= b | \"x\"\nb ::= a\n").ok());
  EXPECT_TRUE(CompileGbnf("root ::= (\"a\"?)* \"b\"\n").ok());
  // Right recursion is fine.
  EXPECT_TRUE(CompileGbnf("root ::= \"a\" root | \"b\"\n").ok());
}

TEST(GbnfParserTest, ReportsEmptyLanguage) {
  EXPECT_EQ(CompileError("root ::= \"a\" root\n"), "grammar admits no string (rule 'root' has no finite derivation)");
  EXPECT_EQ(CompileError("root ::= a\na ::= \"x\" b\nb ::= \"y\" a\n"),
            "grammar admits no string (rule 'root' has no finite derivation)");
  EXPECT_EQ(CompileError("root ::= [^\\x00-\\U0010FFFF]\n"),
            "grammar admits no string (rule 'root' has no finite derivation)");
}

TEST(GbnfParserTest, ReportsRepetitionLimits) {
  EXPECT_EQ(CompileError("root ::= \"a\"{3,2}"), "grammar: line 1, column 13: repetition {m,n} has n < m");
  EXPECT_EQ(CompileError("root ::= \"a\"{20000}"), "grammar: line 1, column 13: repetition bound above the limit of 10000");
  EXPECT_EQ(CompileError("root ::= \"a\"{x}"), "grammar: line 1, column 14: expected a number in '{}'");
  std::string big = "root ::=";
  for (int i = 0; i < 40; ++i) big += " [a-z]{0,10000}";
  EXPECT_NE(CompileError(big).find("too large"), std::string::npos);
}

TEST(GbnfParserTest, AcceptsLlamaCppStyleLayout) {
  // Multi-line rules inside parentheses, continuation lines starting with |,
  // comments, and ::= followed by a newline.
  const char* text = R"(# comment
root ::=
  "{" ws (
     pair
     ("," ws pair)*
  )? "}"   # trailing comment
pair ::= "\"" [a-z]+ "\"" ws ":" ws value
value ::= "1"
  | "true"
  | pair-list
pair-list ::= "[" "]"
ws ::= [ \t\n]*
)";
  auto g = CompileGbnf(text);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
}

}  // namespace
}  // namespace pagoda::grammar
