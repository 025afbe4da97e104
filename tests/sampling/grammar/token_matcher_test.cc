// TokenMatcher masks against a brute-force reference: for every token, a
// copy of the byte matcher takes the token's bytes (or not). Real
// vocabularies from ../shared/testdata; random walks through JSON-like
// grammars deep enough to cut the mask cache's stack window.
#include "sampling/grammar/token_matcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "gguf/gguf_file.h"
#include "sampling/grammar/grammar.h"
#include "sampling/grammar/mask_cache.h"
#include "sampling/grammar/test_grammars.h"
#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::grammar {
namespace {

std::shared_ptr<const Grammar> Compile(std::string_view text) {
  auto g = CompileGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

std::shared_ptr<const TokenVocabIndex> LoadVocab(const std::string& name) {
  auto file = GgufFile::Open(pagoda::testing::TestDataPath(name));
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::FromMetadata((*file)->metadata());
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  if (!tok.ok()) return nullptr;
  return TokenVocabIndex::Build(**tok);
}

// The reference: token t is allowed iff a copy of the matcher takes its
// bytes (text), the matcher accepts (EOG), and, with a budget, the fewest
// bytes to accept afterwards fit in the tokens left.
std::vector<TokenId> BruteForce(const TokenMatcher& tm, int32_t remaining = Grammar::kInfinite) {
  std::vector<TokenId> out;
  const TokenVocabIndex& v = tm.vocab();
  for (TokenId t = 0; t < v.vocab_size(); ++t) {
    switch (v.token_class(t)) {
      case TokenClass::kNever: break;
      case TokenClass::kEog:
        if (tm.matcher().IsAccepting()) out.push_back(t);
        break;
      case TokenClass::kText: {
        GrammarMatcher c = tm.matcher();
        if (c.AcceptBytes(v.bytes(t)) && (remaining >= Grammar::kInfinite || c.MinBytesToAccept() <= remaining - 1)) {
          out.push_back(t);
        }
        break;
      }
    }
  }
  return out;
}

struct WalkParam {
  const char* vocab;
  const char* grammar_name;
  const char* grammar;
};

class MaskWalkTest : public ::testing::TestWithParam<WalkParam> {};

TEST_P(MaskWalkTest, MaskEqualsBruteForceAlongRandomWalks) {
  PAGODA_REQUIRE_TESTDATA(GetParam().vocab);
  auto vocab = LoadVocab(GetParam().vocab);
  auto g = Compile(GetParam().grammar);
  ASSERT_NE(vocab, nullptr);
  ASSERT_NE(g, nullptr);
  TokenBitmask mask;
  int max_depth = 0;
  for (uint32_t seed = 1; seed <= 2; ++seed) {
    std::mt19937 rng(seed);
    TokenMatcher tm(g, vocab);
    std::string text;
    for (int step = 0; step < 20 && !tm.IsFinished(); ++step) {
      SCOPED_TRACE(text);
      tm.ComputeMask(mask);
      const std::vector<TokenId> want = BruteForce(tm);
      ASSERT_EQ(mask.Allowed(), want) << "seed " << seed << " step " << step << " after \"" << text << "\"";
      ASSERT_FALSE(want.empty());
      // Seed 1 opens ten arrays first (cutting the cache window), then
      // walks at random; text is preferred over EOG.
      std::vector<TokenId> pick;
      for (TokenId t : want) {
        if (seed == 1 && step < 10 && vocab->bytes(t) == "[") pick.push_back(t);
      }
      if (pick.empty()) {
        for (TokenId t : want) {
          if (vocab->token_class(t) == TokenClass::kText) pick.push_back(t);
        }
      }
      if (pick.empty()) pick = want;
      const TokenId t = pick[std::uniform_int_distribution<size_t>(0, pick.size() - 1)(rng)];
      ASSERT_TRUE(tm.AcceptToken(t));
      text += vocab->bytes(t);
      for (const Head& h : tm.matcher().heads()) {
        if (h.parent >= 0) max_depth = std::max(max_depth, tm.matcher().arena().node(h.parent).depth);
      }
    }
  }
  if (std::string_view(GetParam().grammar_name) != "nested") {
    EXPECT_GT(max_depth, kMaskCacheDepth) << "the walks never cut the cache window";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Vocabularies, MaskWalkTest,
    ::testing::Values(WalkParam{"ggml-vocab-llama-spm.gguf", "json", pagoda::testing::kJsonGrammar},
                      WalkParam{"ggml-vocab-gpt-2.gguf", "json", pagoda::testing::kJsonGrammar},
                      WalkParam{"ggml-vocab-deepseek-coder.gguf", "json", pagoda::testing::kJsonGrammar},
                      WalkParam{"ggml-vocab-gpt-2.gguf", "nested", pagoda::testing::kNestedObjectGrammar},
                      WalkParam{"ggml-vocab-llama-spm.gguf", "arith", pagoda::testing::kArithmeticGrammar}),
    [](const auto& info) {
      std::string n = std::string(info.param.vocab).substr(11);
      n = n.substr(0, n.find('.')) + "_" + info.param.grammar_name;
      for (char& c : n) if (c == '-') c = '_';
      return n;
    });

TEST(TokenMatcherTest, BudgetAwareMaskIsWithinBruteForce) {
  PAGODA_REQUIRE_TESTDATA("ggml-vocab-gpt-2.gguf");
  auto vocab = LoadVocab("ggml-vocab-gpt-2.gguf");
  auto g = Compile(pagoda::testing::kNestedObjectGrammar);
  ASSERT_NE(vocab, nullptr);
  std::mt19937 rng(7);
  TokenMatcher tm(g, vocab);
  TokenBitmask mask;
  // Walk with a budget that stays tight, checking every mask.
  int32_t remaining = tm.MinBytesToAccept() + 6;
  int steps = 0, exact_steps = 0;
  while (!tm.IsFinished() && remaining > 0) {
    const int32_t n = tm.ComputeMask(mask, remaining);
    const bool check = remaining % 2 == 0 || remaining < 8;  // (the reference is slow)
    const std::vector<TokenId> exact = check ? BruteForce(tm, remaining) : mask.Allowed();
    // Exact with one stack; with several, the bound may drop tokens that
    // would have fit, but never admits one that does not.
    const std::vector<TokenId> got = mask.Allowed();
    ASSERT_TRUE(std::includes(exact.begin(), exact.end(), got.begin(), got.end())) << "remaining " << remaining;
    ASSERT_GT(n, 0) << "budget-aware completion got stuck";
    steps += check;
    exact_steps += check && got == exact;
    std::vector<TokenId> text;
    for (TokenId t : got) {
      if (vocab->token_class(t) == TokenClass::kText) text.push_back(t);
    }
    if (text.empty()) break;  // only EOG left: accepting
    ASSERT_TRUE(tm.AcceptToken(text[std::uniform_int_distribution<size_t>(0, text.size() - 1)(rng)]));
    --remaining;
  }
  EXPECT_TRUE(tm.IsAccepting()) << "the budget ran out mid-structure";
  EXPECT_GT(exact_steps * 2, steps) << "the budget bound is exact in most states";
}

TEST(TokenMatcherTest, Utf8SplitAcrossByteTokens) {
  PAGODA_REQUIRE_TESTDATA("ggml-vocab-llama-spm.gguf");
  auto vocab = LoadVocab("ggml-vocab-llama-spm.gguf");
  auto g = Compile("root ::= \"\\\"\" [^\"\\\\]* \"\\\"\"");
  ASSERT_NE(vocab, nullptr);
  TokenMatcher tm(g, vocab);
  TokenBitmask mask;
  auto find_byte = [&](uint8_t b) {
    for (TokenId t = 0; t < vocab->vocab_size(); ++t) {
      if (vocab->bytes(t) == std::string(1, static_cast<char>(b))) return t;
    }
    return TokenId{-1};
  };
  ASSERT_TRUE(tm.AcceptToken(find_byte('"')));
  const TokenId lead = find_byte(0xE2), cont1 = find_byte(0x82), cont2 = find_byte(0xAC);
  ASSERT_GE(lead, 0);
  tm.ComputeMask(mask);
  EXPECT_TRUE(mask.Test(lead));
  EXPECT_FALSE(mask.Test(cont1)) << "a lone continuation byte is not UTF-8";
  ASSERT_TRUE(tm.AcceptToken(lead));
  tm.ComputeMask(mask);
  EXPECT_EQ(mask.Allowed(), BruteForce(tm));
  EXPECT_TRUE(mask.Test(cont1));
  EXPECT_FALSE(mask.Test(find_byte('a'))) << "mid-character, only continuation bytes";
  EXPECT_FALSE(mask.Test(find_byte('"')));
  ASSERT_TRUE(tm.AcceptToken(cont1));
  ASSERT_TRUE(tm.AcceptToken(cont2));
  tm.ComputeMask(mask);
  EXPECT_TRUE(mask.Test(find_byte('a')));
  EXPECT_EQ(mask.Allowed(), BruteForce(tm));
}

TEST(TokenMatcherTest, ForbidsEverythingWhenNoTokenFits) {
  std::vector<TokenVocabIndex::Entry> entries = {
      {"", TokenClass::kEog, "</s>"}, {"a", TokenClass::kText, "a"}, {"b", TokenClass::kText, "b"},
      {"", TokenClass::kNever, "<ctl>"}, {"ab", TokenClass::kText, "ab"}};
  auto vocab = TokenVocabIndex::FromEntries(entries);
  TokenBitmask mask;
  TokenMatcher none(Compile("root ::= \"c\""), vocab);
  EXPECT_EQ(none.ComputeMask(mask), 0);
  EXPECT_FALSE(none.IsAccepting());
  EXPECT_FALSE(none.AcceptToken(1));
  EXPECT_FALSE(none.AcceptToken(0));

  TokenMatcher done(Compile("root ::= \"a\" \"b\"?"), vocab);
  EXPECT_EQ(done.ComputeMask(mask), 2);  // a, ab
  EXPECT_EQ(mask.Allowed(), (std::vector<TokenId>{1, 4}));
  ASSERT_TRUE(done.AcceptToken(1));
  EXPECT_EQ(mask.Allowed().size(), 2u);
  done.ComputeMask(mask);
  EXPECT_EQ(mask.Allowed(), (std::vector<TokenId>{0, 2}));  // EOG (accepting) or b
  EXPECT_FALSE(done.IsFinished());
  ASSERT_TRUE(done.AcceptToken(2));
  EXPECT_TRUE(done.IsFinished());  // accepting and nothing may follow
  done.ComputeMask(mask);
  EXPECT_EQ(mask.Allowed(), (std::vector<TokenId>{0}));
  ASSERT_TRUE(done.AcceptToken(0));
  EXPECT_TRUE(done.IsFinished());
  EXPECT_EQ(done.ComputeMask(mask), 0);
}

TEST(TokenVocabIndexTest, ReadsTokensAsTheirOutputBytes) {
  PAGODA_REQUIRE_TESTDATA("ggml-vocab-llama-spm.gguf");
  auto file = GgufFile::Open(pagoda::testing::TestDataPath("ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(file.ok());
  auto tok = Tokenizer::FromMetadata((*file)->metadata());
  ASSERT_TRUE(tok.ok());
  auto vocab = TokenVocabIndex::Build(**tok);
  ASSERT_EQ(vocab->vocab_size(), (*tok)->vocab_size());
  EXPECT_EQ(vocab->token_class((*tok)->bos()), TokenClass::kNever);  // control
  EXPECT_EQ(vocab->token_class((*tok)->eos()), TokenClass::kEog);
  EXPECT_EQ(vocab->token_class((*tok)->unk()), TokenClass::kNever);
  const TokenId the = (*tok)->FindToken("\xE2\x96\x81the");  // SPM "▁the"
  ASSERT_GE(the, 0);
  EXPECT_EQ(vocab->bytes(the), " the");
  const TokenId byte_a = (*tok)->FindToken("<0x41>");
  ASSERT_GE(byte_a, 0);
  EXPECT_EQ(vocab->bytes(byte_a), "A");
  EXPECT_EQ(vocab->token_class(byte_a), TokenClass::kText);
  // The trie holds every text token once, in byte order.
  int32_t n_text = 0;
  for (TokenId t = 0; t < vocab->vocab_size(); ++t) n_text += vocab->token_class(t) == TokenClass::kText;
  ASSERT_EQ(static_cast<int32_t>(vocab->trie_tokens().size()), n_text);
  for (size_t i = 1; i < vocab->trie_tokens().size(); ++i) {
    ASSERT_LE(vocab->bytes(vocab->trie_tokens()[i - 1]), vocab->bytes(vocab->trie_tokens()[i]));
  }
}

TEST(TokenMatcherTest, CacheIsSharedAcrossMatchersOfOneGrammar) {
  PAGODA_REQUIRE_TESTDATA("ggml-vocab-gpt-2.gguf");
  auto vocab = LoadVocab("ggml-vocab-gpt-2.gguf");
  auto g = Compile(pagoda::testing::kJsonGrammar);
  TokenBitmask mask;
  TokenMatcher a(g, vocab), b(g, vocab);
  a.ComputeMask(mask);
  const auto before = vocab->CacheFor(g)->stats();
  b.ComputeMask(mask);
  const auto after = vocab->CacheFor(g)->stats();
  EXPECT_EQ(after.hits, before.hits + 1);
  EXPECT_EQ(after.misses, before.misses);
}

}  // namespace
}  // namespace pagoda::grammar
