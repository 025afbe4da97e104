// RegexToGbnf: the compiled grammar accepts exactly what std::regex
// (ECMAScript syntax, an independent engine) matches, over a set of probe
// strings; the JSON-string and search modes; unsupported constructs name
// themselves.
#include "sampling/grammar/regex.h"

#include <gtest/gtest.h>

#include <bitset>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "sampling/grammar/grammar.h"
#include "sampling/grammar/matcher.h"
#include "sampling/grammar/regex_charset.h"

namespace pagoda::grammar {
namespace {

std::shared_ptr<const Grammar> CompileRegex(const std::string& re) {
  auto gbnf = RegexToGbnf(re);
  EXPECT_TRUE(gbnf.ok()) << re << ": " << gbnf.status().ToString();
  if (!gbnf.ok()) return nullptr;
  auto g = CompileGbnf(*gbnf);
  EXPECT_TRUE(g.ok()) << re << "\n" << *gbnf << "\n" << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

const std::vector<std::string> kProbes = {
    "",      "a",      "b",     "ab",    "abc",   "aab",    "abab",  "ba",     "0",      "7",
    "42",    "123",    "1234",  "12345", "a1",    "1a",     "_",     "a_b",    " ",      "a b",
    "\t",    "\n",     "a\nb",  "\r",    ".",     "a.b",    "-",     "a-b",    "x-y-z",  "aaa",
    "aaaa",  "aaaaa",  "abcd",  "cat",   "dog",   "cats",   "catdog", "(a)",   "[",      "]",
    "^",     "$",      "a$",    "+",     "*",     "?",      "{",     "}",      "|",      "\\",
    "/",     "AZ",     "Zz",    "zz9",   "A-1",   "hello world", "2024-01-31", "12:30", "#fff",
    "#ABCDEF", "ab12", "xyz",   "\"",    "a\"b",  "foo.bar", "a,b",  "aa11",   "abcabc", "e",
};

// Patterns within the subset whose std::regex (ECMAScript) meaning is the
// same as JavaScript's over ASCII text.
const std::vector<std::string> kPatterns = {
    "a",        "abc",          "a|b",        "ab|cd|",      "a*",          "a+",
    "a?",       "a{3}",         "a{2,}",      "a{1,3}",      "(ab)+",       "(?:ab)*c?",
    "[abc]",    "[a-c]+",       "[^a-c]",     "[^a-c]*",     "\\d+",        "\\d{4}-\\d{2}-\\d{2}",
    "\\w+",     "\\W",          "\\s",        "\\S+",        "\\D*",        ".",
    ".*",       "a.b",          "\\.",        "[.]+",        "[\\d\\-]+",   "[-a]",
    "[a-]",     "\\(a\\)",      "\\[|\\]",    "\\^|\\$",     "\\+\\*\\?",   "\\{\\}",
    "\\|",      "\\\\",         "\\/",        "^abc$",       "^a|b$",       "(a|b)*abb",
    "(cat|dog)s?", "#[0-9a-fA-F]{6}", "#([0-9a-f]{3}){1,2}", "[A-Z][a-z]*", "x(-y)*(-z)?",
    "\\d{1,2}:\\d{2}", "[a-z0-9._]+", "\\x41\\u005A", "[\\x30-\\x39]+", "(a(b(c)?)?)?",
    "a{0}b",    "(?:)",         "()a",        "\"",           "a\"b",        "[\\s\\S]",
    "a*?b",     "a+?",
};

TEST(RegexToGbnfTest, MatchesStdRegexOnProbes) {
  for (const auto& pattern : kPatterns) {
    auto g = CompileRegex(pattern);
    ASSERT_NE(g, nullptr) << pattern;
    const std::regex re(pattern, std::regex::ECMAScript);
    for (const auto& probe : kProbes) {
      EXPECT_EQ(Accepts(*g, probe), std::regex_match(probe, re))
          << "pattern /" << pattern << "/ on \"" << probe << "\"";
    }
  }
}

TEST(RegexToGbnfTest, DotExcludesLineTerminatorsOnly) {
  auto g = CompileRegex(".");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Accepts(*g, "\xC3\xA9"));          // é, one code point
  EXPECT_TRUE(Accepts(*g, "\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_FALSE(Accepts(*g, "\xC3\xA9x"));
  EXPECT_FALSE(Accepts(*g, "\n"));
  EXPECT_FALSE(Accepts(*g, "\r"));
  EXPECT_FALSE(Accepts(*g, "\xE2\x80\xA8"));  // U+2028
  EXPECT_TRUE(Accepts(*g, "\t"));
}

TEST(RegexToGbnfTest, NonAsciiLiteralsAndClasses) {
  auto g = CompileRegex("[\xC3\xA0-\xC3\xBF]+\xE2\x82\xAC");  // [à-ÿ]+€
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Accepts(*g, "\xC3\xA9\xC3\xA0\xE2\x82\xAC"));
  EXPECT_FALSE(Accepts(*g, "e\xE2\x82\xAC"));
  auto u = CompileRegex("\\u{1F600}");
  ASSERT_NE(u, nullptr);
  EXPECT_TRUE(Accepts(*u, "\xF0\x9F\x98\x80"));
}

TEST(RegexToGbnfTest, NamedGroupsAreGroups) {
  auto g = CompileRegex("(?<word>[a-z]+) (?<rest>.*)");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(Accepts(*g, "hello world"));
  EXPECT_FALSE(Accepts(*g, "Hello world"));
}

TEST(RegexToGbnfTest, RootNameIsUsed) {
  auto gbnf = RegexToGbnf("ab", "my-rule");
  ASSERT_TRUE(gbnf.ok());
  auto g = CompileGbnf(*gbnf, "my-rule");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(Accepts(**g, "ab"));
}

// JSON Schema `pattern`: unanchored search over the decoded string, with the
// grammar producing the JSON encoding.
TEST(RegexToGbnfTest, JsonSearchModeMatchesStdRegexSearch) {
  const std::vector<std::string> patterns = {"a", "^a", "a$", "^a$", "b+c", "^\\d+$", "^[^\"]*$",
                                             "\"", "x|^y", "^$", "", "\\\\", "^a.c$"};
  const std::vector<std::string> values = {"",   "a",  "ba",  "ab",   "bac",  "123", "12a",
                                           "a\"", "\"", "x",   "yy",   "\\",  "abc", "a\nc",
                                           "a\tc", "a\\c", "zzbbcz"};
  for (const auto& pattern : patterns) {
    auto expr = RegexToGbnfExpression(pattern, RegexMatchMode::kSearch, RegexTextMode::kJsonString);
    ASSERT_TRUE(expr.ok()) << pattern << ": " << expr.status().ToString();
    const std::string gbnf = "root ::= \"\\\"\" " + *expr + " \"\\\"\"\n";
    auto g = CompileGbnf(gbnf);
    ASSERT_TRUE(g.ok()) << pattern << "\n" << gbnf << g.status().ToString();
    const std::regex re(pattern, std::regex::ECMAScript);
    for (const auto& v : values) {
      const std::string encoded = nlohmann::json(v).dump();
      EXPECT_EQ(Accepts(**g, encoded), std::regex_search(v, re))
          << "pattern /" << pattern << "/ on " << encoded;
    }
  }
}

TEST(RegexToGbnfTest, JsonModeEscapesControlCharacters) {
  auto expr = RegexToGbnfExpression("^[\\x00-\\x1f]$", RegexMatchMode::kSearch, RegexTextMode::kJsonString);
  ASSERT_TRUE(expr.ok());
  auto g = CompileGbnf("root ::= \"\\\"\" " + *expr + " \"\\\"\"\n");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (int c = 0; c < 0x20; ++c) {
    const std::string encoded = nlohmann::json(std::string(1, static_cast<char>(c))).dump();
    EXPECT_TRUE(Accepts(**g, encoded)) << encoded;
  }
  EXPECT_FALSE(Accepts(**g, "\"\n\""));  // raw control characters are not JSON
  EXPECT_FALSE(Accepts(**g, "\"a\""));
}

TEST(RegexToGbnfTest, RejectsUnsupportedConstructsByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"(a)\\1", "backreference"},
      {"a(?=b)", "lookahead"},
      {"a(?!b)", "lookahead"},
      {"(?<=a)b", "lookbehind"},
      {"(?<!a)b", "lookbehind"},
      {"\\bword", "word boundary"},
      {"\\Bx", "\\B"},
      {"\\p{L}", "Unicode property"},
      {"(?i)abc", "inline flags"},
      {"a++", "possessive"},
      {"a^b", "anchors"},
      {"a$b", "anchors"},
      {"x(^a)", "anchors"},
      {"^*", "anchor"},
      {"*a", "nothing to repeat"},
      {"a**", "nothing to repeat"},
      {"(ab", "missing ')'"},
      {"ab)", "unmatched ')'"},
      {"[ab", "unterminated character class"},
      {"[z-a]", "out of order"},
      {"a{2,1}", "m > n"},
      {"a{100000}", "repetition bound"},
      {"a{", "lone '{'"},
      {"\\k<n>", "named backreference"},
      {"\\cA", "control escape"},
      {"\\q", "unsupported escape"},
      {"[^\\s\\S]", "matches nothing"},
      {"\\ud800", "surrogates"},
      {"abc\\", "backslash"},
  };
  for (const auto& [pattern, needle] : cases) {
    auto r = RegexToGbnf(pattern);
    ASSERT_FALSE(r.ok()) << pattern;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos)
        << pattern << " -> " << r.status().message();
  }
}

// CodePointSet against a bitset over a small domain (the sets stay inside it).
TEST(CodePointSetTest, SetOperationsMatchABitset) {
  constexpr int kDomain = 200;
  std::mt19937 rng(3);
  auto random_set = [&](std::bitset<kDomain>* bits) {
    CodePointSet s;
    for (int r = rng() % 5; r > 0; --r) {
      const char32_t lo = rng() % kDomain, hi = std::min<char32_t>(kDomain - 1, lo + rng() % 30);
      s.Add(lo, hi);
      for (char32_t c = lo; c <= hi; ++c) bits->set(c);
    }
    return s;
  };
  const CodePointSet domain = CodePointSet::Range(0, kDomain - 1);
  for (int round = 0; round < 200; ++round) {
    std::bitset<kDomain> a_bits, b_bits;
    const CodePointSet a = random_set(&a_bits), b = random_set(&b_bits);
    const CodePointSet minus = a.Minus(b), inter = a.Intersect(b), comp = a.Complement().Intersect(domain);
    CodePointSet uni = a;
    uni.Add(b);
    for (char32_t c = 0; c < kDomain; ++c) {
      ASSERT_EQ(a.Contains(c), a_bits[c]);
      ASSERT_EQ(minus.Contains(c), a_bits[c] && !b_bits[c]);
      ASSERT_EQ(inter.Contains(c), a_bits[c] && b_bits[c]);
      ASSERT_EQ(uni.Contains(c), a_bits[c] || b_bits[c]);
      ASSERT_EQ(comp.Contains(c), !a_bits[c]);
    }
    for (size_t i = 1; i < uni.ranges().size(); ++i) {
      ASSERT_GT(uni.ranges()[i].lo, uni.ranges()[i - 1].hi + 1);  // sorted, disjoint, not adjacent
    }
  }
  EXPECT_FALSE(CodePointSet::All().Contains(0xD800));
  EXPECT_FALSE(CodePointSet::All().Contains(0xDFFF));
  EXPECT_TRUE(CodePointSet::All().Contains(0x10FFFF));
  EXPECT_TRUE(CodePointSet::Of('a').Complement().Contains(0xE000));
}

TEST(RegexToGbnfTest, RejectsInvalidUtf8) {
  auto r = RegexToGbnf("a\xFF");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("UTF-8"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::grammar
