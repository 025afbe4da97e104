#include "tokenizer/pre_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagoda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Split(const std::string& pre, const std::string& text) {
  auto p = PreTokenizer::Create(pre);
  PAGODA_CHECK(p.ok()) << p.status().ToString();
  std::vector<std::string_view> words;
  (*p)->Split(text, &words);
  return {words.begin(), words.end()};
}

std::string Join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += w;
  return s;
}

TEST(PreTokenizerTest, Gpt2SplitsWordsContractionsAndSpaces) {
  EXPECT_THAT(Split("gpt-2", "Hello world  123 I've!!"),
              ElementsAre("Hello", " world", " ", " 123", " I", "'ve", "!!"));
  EXPECT_THAT(Split("gpt-2", "a\n\nb"), ElementsAre("a", "\n", "\n", "b"));
  EXPECT_THAT(Split("gpt-2", "tail   "), ElementsAre("tail", "   "));
}

TEST(PreTokenizerTest, Llama3GroupsDigitsByThreeAndKeepsNewlines) {
  EXPECT_THAT(Split("llama-bpe", "1234567 ab\n\n  c"),
              ElementsAre("123", "456", "7", " ab", "\n\n", " ", " c"));
  EXPECT_THAT(Split("llama-bpe", "DON'T"), ElementsAre("DON", "'T"));
}

TEST(PreTokenizerTest, Qwen2SplitsEveryDigit) {
  EXPECT_THAT(Split("qwen2", "x 2024"), ElementsAre("x", " ", "2", "0", "2", "4"));
}

TEST(PreTokenizerTest, DeepseekV3IsolatesCjkRuns) {
  EXPECT_THAT(Split("deepseek-v3", "ab中文cd"), ElementsAre("ab", "中文", "cd"));
}

TEST(PreTokenizerTest, UnknownNameListsSupportedOnes) {
  auto p = PreTokenizer::Create("nope");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("'nope'"));
  EXPECT_THAT(p.status().message(), HasSubstr("llama-bpe"));
  EXPECT_TRUE(PreTokenizer::Create("").ok());  // missing key: "default"
}

TEST(PreTokenizerTest, CoversEveryByteOfInvalidUtf8) {
  const std::string text = "a\xFF\xFE b\xC3 \xE2\x82 1\x80";
  for (const std::string& name : PreTokenizer::SupportedNames()) {
    const auto words = Split(name, text);
    EXPECT_EQ(Join(words), text) << name;
    for (const auto& w : words) EXPECT_FALSE(w.empty()) << name;
  }
}

TEST(PreTokenizerTest, HandlesHugeWhitespaceRuns) {
  const std::string text = std::string(1 << 20, ' ') + "x" + std::string(1 << 18, '\n');
  for (const char* name : {"gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-v3"}) {
    EXPECT_EQ(Join(Split(name, text)), text) << name;
  }
}

TEST(PreTokenizerTest, FromRegexesRejectsBadPatterns) {
  auto p = PreTokenizer::FromRegexes("custom", {"[unclosed"});
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("custom"));
}

}  // namespace
}  // namespace pagoda
