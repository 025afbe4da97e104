#include "gateway/usage_reader.h"

#include <gtest/gtest.h>

namespace pagoda::gateway {
namespace {

TEST(UsageReaderTest, ReadsPromptAndCachedTokens) {
  const auto u = ReadUsage(R"({"id":"x","usage":{"prompt_tokens":70,"completion_tokens":5,
                              "prompt_tokens_details":{"cached_tokens":64}}})");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->prompt_tokens, 70);
  EXPECT_EQ(u->cached_tokens, 64);
}

TEST(UsageReaderTest, CachedTokensAreOptional) {
  const auto u = ReadUsage(R"({"choices":[],"usage" : {"prompt_tokens":3}})");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->prompt_tokens, 3);
  EXPECT_FALSE(u->cached_tokens.has_value());
}

TEST(UsageReaderTest, ChunksWithoutUsageAndGarbageAreNothing) {
  EXPECT_FALSE(ReadUsage(R"({"choices":[{"delta":{"content":"hi"}}]})"));
  EXPECT_FALSE(ReadUsage(R"({"choices":[],"usage":null})"));
  EXPECT_FALSE(ReadUsage("[DONE]"));
  EXPECT_FALSE(ReadUsage(R"({"usage":{"prompt_tokens":"many"}})"));
  EXPECT_FALSE(ReadUsage(R"({"usage":{"prompt_tokens":)"));
  EXPECT_FALSE(ReadUsage(R"(["usage"])"));
}

}  // namespace
}  // namespace pagoda::gateway
