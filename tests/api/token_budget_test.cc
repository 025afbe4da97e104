#include "api/token_budget.h"

#include <gtest/gtest.h>

namespace pagoda::api {
namespace {

TEST(TokenBudgetTest, PromptFillingTheContextIsContextLengthExceeded) {
  GenerationOptions o;
  auto r = ResolveMaxTokens(2048, o, 2048, std::nullopt, "messages");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_EQ(*r.error().code, "context_length_exceeded");
  EXPECT_EQ(*r.error().param, "messages");
}

TEST(TokenBudgetTest, MaxTokensPastTheContextNamesTheField) {
  GenerationOptions o;
  o.max_tokens = 100;
  o.max_tokens_param = "max_completion_tokens";
  auto r = ResolveMaxTokens(2000, o, 2048, std::nullopt, "prompt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(*r.error().param, "max_completion_tokens");
  EXPECT_NE(r.error().message.find("2048"), std::string::npos);
  o.max_tokens = 48;
  EXPECT_EQ(ResolveMaxTokens(2000, o, 2048, std::nullopt, "prompt").value(), 48);
}

TEST(TokenBudgetTest, DefaultIsCappedByTheRoomLeft) {
  GenerationOptions o;
  EXPECT_EQ(ResolveMaxTokens(10, o, 2048, 16, "prompt").value(), 16);
  EXPECT_EQ(ResolveMaxTokens(2040, o, 2048, 16, "prompt").value(), 8);
  EXPECT_EQ(ResolveMaxTokens(48, o, 2048, std::nullopt, "messages").value(), 2000);
}

TEST(TokenBudgetTest, TokenIdsAndLogitBiasOutsideTheVocab) {
  const std::vector<int32_t> ids{1, 511, 512};
  auto e = CheckTokenIds(ids, 512, "prompt");
  ASSERT_TRUE(e);
  EXPECT_EQ(*e->param, "prompt[2]");
  EXPECT_FALSE(CheckTokenIds(std::vector<int32_t>{0, 511}, 512, "prompt"));
  GenerationOptions o;
  o.logit_bias[600] = 1.0f;
  EXPECT_TRUE(CheckLogitBias(o, 512));
}

}  // namespace
}  // namespace pagoda::api
