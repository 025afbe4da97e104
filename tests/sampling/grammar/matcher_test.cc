// GrammarMatcher: language membership against hand-written positive and
// negative strings for every construct, and the state queries.
#include "sampling/grammar/matcher.h"

#include <gtest/gtest.h>

namespace pagoda::grammar {
namespace {

std::shared_ptr<const Grammar> Compile(std::string_view text) {
  auto g = CompileGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

struct Case {
  const char* grammar;
  std::vector<std::string> yes;
  std::vector<std::string> no;
};

class AcceptsTest : public ::testing::TestWithParam<Case> {};

TEST_P(AcceptsTest, MatchesHandWrittenStrings) {
  auto g = Compile(GetParam().grammar);
  ASSERT_NE(g, nullptr);
  for (const std::string& s : GetParam().yes) EXPECT_TRUE(Accepts(*g, s)) << "should accept \"" << s << "\"";
  for (const std::string& s : GetParam().no) EXPECT_FALSE(Accepts(*g, s)) << "should reject \"" << s << "\"";
}

INSTANTIATE_TEST_SUITE_P(
    Constructs, AcceptsTest,
    ::testing::Values(
        Case{"root ::= \"abc\"", {"abc"}, {"", "ab", "abcd", "abd"}},
        Case{"root ::= \"\"", {""}, {"a"}},
        Case{"root ::= \"a\" | \"bc\" | \"\"", {"a", "bc", ""}, {"b", "abc"}},
        Case{"root ::= [a-c]", {"a", "b", "c"}, {"d", "", "ab"}},
        Case{"root ::= [^a-c]", {"d", "Z", "\n", "\xC3\xA9", "\xF0\x9F\x98\x80"}, {"a", "", "dd", "\xC3", "\xFF"}},
        Case{"root ::= [a-zA-Z_] [a-zA-Z0-9_]*", {"x", "_a1", "abcXYZ09"}, {"1a", "", "a-b"}},
        Case{"root ::= \"a\"*", {"", "a", "aaaa"}, {"b", "ab"}},
        Case{"root ::= \"a\"+", {"a", "aaa"}, {"", "b"}},
        Case{"root ::= \"a\"? \"b\"", {"b", "ab"}, {"aab", "a"}},
        Case{"root ::= \"ab\"{3}", {"ababab"}, {"abab", "abababab", ""}},
        Case{"root ::= \"a\"{2,}", {"aa", "aaaaa"}, {"a", ""}},
        Case{"root ::= \"a\"{2,4}", {"aa", "aaa", "aaaa"}, {"a", "aaaaa"}},
        Case{"root ::= \"a\"{,2}", {"", "a", "aa"}, {"aaa"}},
        Case{"root ::= \"a\"{0}", {""}, {"a"}},
        Case{"root ::= (\"x\" | \"yz\")+ \"!\"", {"x!", "yzx!", "xxyz!"}, {"!", "y!", "xy!"}},
        Case{"root ::= (\"a\" | \"a\")*", {"", "a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, {"b"}},
        Case{"root ::= .", {"a", "\n", "\xE2\x82\xAC", "\xF4\x8F\xBF\xBF"}, {"", "ab", "\xED\xA0\x80", "\xC0\x80", "\xF4\x90\x80\x80"}},
        Case{"root ::= [\\u00e9-\\u00ea] \"\\u20AC\" [\\U0001F600]",
             {"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "\xC3\xAA\xE2\x82\xAC\xF0\x9F\x98\x80"},
             {"e\xE2\x82\xAC\xF0\x9F\x98\x80"}},
        Case{"root ::= \"caf\xC3\xA9\" [\xE2\x82\xAC]", {"caf\xC3\xA9\xE2\x82\xAC"}, {"cafe\xE2\x82\xAC"}},
        Case{"root ::= \"\\n\\t\\\"\\\\\\x41\"", {"\n\t\"\\A"}, {"\n\t\"\\a"}},
        Case{"root ::= [\\]\\-\\^\\\\]+", {"]", "-", "^", "\\", "]-^\\"}, {"a"}},
        Case{"root ::= [-a]", {"-", "a"}, {"b"}},
        Case{"root ::= \"(\" root \")\" | \"\"", {"", "()", "((()))"}, {"(", "())", ")("}},
        Case{"root ::= list\nlist ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= [0-9]+ | list",
             {"[]", "[1]", "[1,22,[3,[]]]"}, {"[", "[1,]", "[,1]", "[1 2]"}},
        // Nullable rules inside sequences and nested optionals.
        Case{"root ::= a b a\na ::= \"x\"?\nb ::= \"-\"", {"-", "x-", "-x", "x-x"}, {"xx-", "x"}},
        Case{"root ::= ((\"a\"?)?)* \"b\"", {"b", "ab", "aaab"}, {"", "ba"}}));

TEST(GrammarMatcherTest, RejectionLeavesStateUnchanged) {
  auto g = Compile("root ::= \"abc\" | \"abd\"");
  GrammarMatcher m(g);
  ASSERT_TRUE(m.AcceptBytes("a"));
  EXPECT_FALSE(m.AcceptBytes("bx"));
  EXPECT_FALSE(m.AcceptBytes("c"));
  EXPECT_TRUE(m.AcceptBytes("bd"));
  EXPECT_TRUE(m.IsAccepting());
  EXPECT_FALSE(m.CanContinue());
}

TEST(GrammarMatcherTest, CopiesAreIndependent) {
  auto g = Compile("root ::= [a-z]+ \".\"");
  GrammarMatcher m(g);
  ASSERT_TRUE(m.AcceptBytes("ab"));
  GrammarMatcher c = m;
  ASSERT_TRUE(c.AcceptBytes("."));
  EXPECT_TRUE(c.IsAccepting());
  EXPECT_FALSE(m.IsAccepting());
  EXPECT_TRUE(m.AcceptBytes("cd."));
  EXPECT_TRUE(m.IsAccepting());
}

TEST(GrammarMatcherTest, MinBytesToAccept) {
  auto g = Compile("root ::= \"{\" ws (\"\\\"key\\\"\" ws \":\" ws \"1\")? ws \"}\"\nws ::= \" \"*");
  GrammarMatcher m(g);
  EXPECT_EQ(m.MinBytesToAccept(), 2);  // "{}"
  ASSERT_TRUE(m.AcceptBytes("{ \"k"));
  EXPECT_EQ(m.MinBytesToAccept(), 6);  // ey":1}
  ASSERT_TRUE(m.AcceptBytes("ey\" :"));
  EXPECT_EQ(m.MinBytesToAccept(), 2);  // 1}
  ASSERT_TRUE(m.AcceptBytes(" 1"));
  EXPECT_EQ(m.MinBytesToAccept(), 1);
  ASSERT_TRUE(m.AcceptBytes("}"));
  EXPECT_EQ(m.MinBytesToAccept(), 0);
}

TEST(GrammarMatcherTest, AllowedNextBytes) {
  auto g = Compile("root ::= \"a\" [0-2] | \"b\"");
  GrammarMatcher m(g);
  std::bitset<256> bs;
  m.AllowedNextBytes(bs);
  EXPECT_EQ(bs.count(), 2u);
  EXPECT_TRUE(bs.test('a'));
  EXPECT_TRUE(bs.test('b'));
  ASSERT_TRUE(m.AcceptBytes("a"));
  m.AllowedNextBytes(bs);
  EXPECT_EQ(bs.count(), 3u);
  EXPECT_TRUE(bs.test('0') && bs.test('1') && bs.test('2'));
  ASSERT_TRUE(m.AcceptBytes("1"));
  m.AllowedNextBytes(bs);
  EXPECT_TRUE(bs.none());
}

TEST(GrammarMatcherTest, DeepNestingAndLongRunsStayBounded) {
  auto g = Compile("root ::= arr\narr ::= \"[\" (arr (\",\" arr)*)? \"]\"");
  GrammarMatcher m(g);
  std::string open(2000, '['), close(2000, ']');
  ASSERT_TRUE(m.AcceptBytes(open));
  EXPECT_EQ(m.MinBytesToAccept(), 2000);
  ASSERT_TRUE(m.AcceptBytes(close));
  EXPECT_TRUE(m.IsAccepting());
  // A long run inside one rule keeps the stack arena compacted.
  auto g2 = Compile("root ::= (\"[\" [a-z]* \"]\")*");
  GrammarMatcher m2(g2);
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(m2.AcceptBytes("[abc]"));
  EXPECT_LT(m2.arena().size(), 4096);
}

}  // namespace
}  // namespace pagoda::grammar
