#include "model/synthetic_vocab.h"

#include <string>
#include <vector>
#include <unordered_set>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

TEST(SyntheticVocabTest, ArraysHaveRequestedLengthAndSpecialLayout) {
  for (int32_t n : {260, 261, 512, 32000, 151936}) {
    Result<GgufMetadata> md = MakeSyntheticVocab(n);
    ASSERT_TRUE(md.ok()) << md.status().ToString();
    auto tokens = md->GetStringArray("tokenizer.ggml.tokens");
    auto scores = md->GetFloatArray("tokenizer.ggml.scores");
    auto types = md->GetIntArray("tokenizer.ggml.token_type");
    ASSERT_TRUE(tokens.ok() && scores.ok() && types.ok());
    ASSERT_EQ(tokens->size(), size_t(n));
    ASSERT_EQ(scores->size(), size_t(n));
    ASSERT_EQ(types->size(), size_t(n));
    EXPECT_EQ((*tokens)[0], "<unk>");
    EXPECT_EQ((*tokens)[1], "<s>");
    EXPECT_EQ((*tokens)[2], "</s>");
    EXPECT_EQ((*types)[0], 2);
    EXPECT_EQ((*types)[1], 3);
    EXPECT_EQ((*types)[2], 3);
    EXPECT_EQ((*tokens)[3], "<0x00>");
    EXPECT_EQ((*tokens)[3 + 0x0A], "<0x0A>");
    EXPECT_EQ((*tokens)[258], "<0xFF>");
    for (int i = 3; i < 259; ++i) EXPECT_EQ((*types)[i], 6) << i;
    for (int i = 259; i < n; ++i) ASSERT_EQ((*types)[i], 1) << i;
    for (int i = 260; i < n; ++i) ASSERT_LT((*scores)[i], (*scores)[i - 1]) << i;
    std::unordered_set<std::string> unique(tokens->begin(), tokens->end());
    EXPECT_EQ(unique.size(), size_t(n)) << "duplicate tokens";
    EXPECT_EQ(*md->GetString("tokenizer.ggml.model"), "llama");
    EXPECT_EQ(*md->GetInt("tokenizer.ggml.bos_token_id"), 1);
    EXPECT_EQ(*md->GetInt("tokenizer.ggml.eos_token_id"), 2);
    EXPECT_EQ(*md->GetInt("tokenizer.ggml.unknown_token_id"), 0);
    EXPECT_TRUE(*md->GetBool("tokenizer.ggml.add_bos_token"));
  }
}

TEST(SyntheticVocabTest, WordsAreReachableThroughTheirPrefixes) {
  Result<GgufMetadata> md = MakeSyntheticVocab(4000);
  ASSERT_TRUE(md.ok());
  auto tokens = md->GetStringArray("tokenizer.ggml.tokens");
  std::unordered_set<std::string> set(tokens->begin(), tokens->end());
  for (const char* p : {"\xE2\x96\x81", "\xE2\x96\x81t", "\xE2\x96\x81th", "\xE2\x96\x81the", "t",
                        "h", "e", "th", "the", "A", "~", "0"}) {
    EXPECT_TRUE(set.count(p)) << p;
  }
}

TEST(SyntheticVocabTest, AnyTextRoundTripsThroughTheSpmTokenizer) {
  const char* texts[] = {"Hello world! The cat sat on the mat.", "  leading spaces\tand\nnewlines",
                         "\xC3\x9C" "n\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82", "x",
                         "<s> not special"};
  for (int32_t n : {kSyntheticVocabMinSize, 512, 32000}) {
    auto md = MakeSyntheticVocab(n);
    ASSERT_TRUE(md.ok());
    auto tok = Tokenizer::FromMetadata(*md);
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    for (const char* text : texts) {
      const std::vector<TokenId> ids = (*tok)->Encode(text, /*add_special=*/true, /*parse_special=*/false);
      ASSERT_FALSE(ids.empty());
      EXPECT_EQ(ids[0], 1) << "BOS";
      for (TokenId id : ids) EXPECT_NE(id, 0) << "no <unk> with byte fallback";
      EXPECT_EQ((*tok)->Decode(ids), text) << "vocab " << n;
    }
  }
}

TEST(SyntheticVocabTest, IsDeterministic) {
  auto a = MakeSyntheticVocab(1000), b = MakeSyntheticVocab(1000);
  EXPECT_EQ(*a->GetStringArray("tokenizer.ggml.tokens"), *b->GetStringArray("tokenizer.ggml.tokens"));
}

TEST(SyntheticVocabTest, RejectsSizesOutsideRange) {
  EXPECT_EQ(MakeSyntheticVocab(259).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(MakeSyntheticVocab(kSyntheticVocabMaxSize + 1).ok());
}

}  // namespace
}  // namespace pagoda
