#include "gateway/usage_reader.h"

#include <gtest/gtest.h>

namespace pagoda::gateway {
namespace {

TEST(UsageReaderTest, ReadsPromptAndCachedTokens) {
  const auto u = ReadUsage(R"({"id":"x","usage":{"prompt_tokens":70,"completion_tokens":5,
                              "prompt_tokens_details":{"cached_tokens":64}}})");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->prompt_tokens, 70);
  EXPECT_EQ(u->completion_tokens, 5);
  EXPECT_EQ(u->cached_tokens, 64);
  EXPECT_FALSE(u->usage_only);  // a whole response: no "choices": []
}

// The chunk stream_options.include_usage adds has no choices; vLLM's
// continuous usage stats put usage in chunks that do have them.
TEST(UsageReaderTest, TellsTheUsageOnlyChunkFromChunksWithChoices) {
  const auto last = ReadUsage(R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}})");
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->usage_only);
  EXPECT_EQ(last->completion_tokens, 4);
  const auto cont = ReadUsage(R"({"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":9}})");
  ASSERT_TRUE(cont.has_value());
  EXPECT_FALSE(cont->usage_only);
  EXPECT_EQ(cont->completion_tokens, 0);
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
