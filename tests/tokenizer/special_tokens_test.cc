#include "tokenizer/special_tokens.h"

#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

namespace pagoda {
namespace {

struct Piece {
  std::string text;
  TokenId token;
  bool operator==(const Piece&) const = default;
};

std::vector<Piece> SplitAll(const SpecialTokenMatcher& m, std::string_view text, bool parse_special) {
  std::vector<Fragment> frags;
  m.Split(text, parse_special, &frags);
  std::vector<Piece> out;
  for (const auto& f : frags) out.push_back({std::string(f.text), f.token});
  return out;
}

class SpecialTokenMatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto v = Vocab::Load(testing::MakeSpmMetadata({"x"}, {{"<|a|>", TokenAttr::kControl},
                                                          {"<|a|>b", TokenAttr::kControl},
                                                          {"  ", TokenAttr::kUserDefined}}),
                         TokenizerKind::kSpm);
    PAGODA_CHECK(v.ok());
    vocab_ = std::move(v).value();
    matcher_.Build(vocab_);
    a_ = vocab_.Find("<|a|>");
    ab_ = vocab_.Find("<|a|>b");
    sp_ = vocab_.Find("  ");
  }
  Vocab vocab_;
  SpecialTokenMatcher matcher_;
  TokenId a_ = 0, ab_ = 0, sp_ = 0;
};

TEST_F(SpecialTokenMatcherTest, LeftmostLongestWithTextBetween) {
  EXPECT_EQ(SplitAll(matcher_, "x<|a|>by<|a|>", true),
            (std::vector<Piece>{{"x", -1}, {"", ab_}, {"y", -1}, {"", a_}}));
  EXPECT_EQ(SplitAll(matcher_, "<|a|", true), (std::vector<Piece>{{"<|a|", -1}}));
  EXPECT_EQ(SplitAll(matcher_, "<s></s><unk>", true), (std::vector<Piece>{{"", 1}, {"", 2}, {"", 0}}));
}

TEST_F(SpecialTokenMatcherTest, OnlyUserDefinedWithoutParseSpecial) {
  EXPECT_EQ(SplitAll(matcher_, "<|a|>   z", false), (std::vector<Piece>{{"<|a|>", -1}, {"", sp_}, {" z", -1}}));
  EXPECT_TRUE(SplitAll(matcher_, "", true).empty());
}

}  // namespace
}  // namespace pagoda
