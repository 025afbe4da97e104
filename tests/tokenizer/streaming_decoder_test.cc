#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace pagoda {
namespace {

std::unique_ptr<Tokenizer> ByteSpm() {
  auto tok = Tokenizer::FromMetadata(testing::MakeSpmMetadata({"a"}));
  PAGODA_CHECK(tok.ok()) << tok.status().ToString();
  return std::move(tok).value();
}
TokenId Byte(uint8_t b) { return 3 + b; }  // <0xNN> in MakeSpmMetadata

TEST(StreamingDecoderTest, HoldsBackMultiByteCharactersSplitAcrossTokens) {
  auto tok = ByteSpm();
  StreamingDecoder dec(*tok);
  EXPECT_EQ(dec.Push(Byte(0xC3)), "");
  EXPECT_EQ(dec.pending_bytes(), 1u);
  EXPECT_EQ(dec.Push(Byte(0xA9)), "é");
  // U+1F999 in four tokens.
  EXPECT_EQ(dec.Push(Byte(0xF0)), "");
  EXPECT_EQ(dec.Push(Byte(0x9F)), "");
  EXPECT_EQ(dec.Push(Byte(0xA6)), "");
  EXPECT_EQ(dec.Push(Byte(0x99)), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(dec.Push(3 + 256), "a");
  EXPECT_EQ(dec.Flush(), "");
}

TEST(StreamingDecoderTest, InvalidBytesBecomeReplacementCharacters) {
  auto tok = ByteSpm();
  StreamingDecoder dec(*tok);
  EXPECT_EQ(dec.Push(Byte(0xFF)), "\xEF\xBF\xBD");
  EXPECT_EQ(dec.Push(Byte(0xE2)), "");
  // 'a' cannot continue the sequence: the lead byte is released as U+FFFD.
  EXPECT_EQ(dec.Push(3 + 256), "\xEF\xBF\xBD" "a");
  EXPECT_EQ(dec.Push(Byte(0xE2)), "");
  EXPECT_EQ(dec.Push(Byte(0x82)), "");
  EXPECT_EQ(dec.Flush(), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(dec.Flush(), "");
}

TEST(StreamingDecoderTest, SpecialTokensFollowTheFlag) {
  auto tok = ByteSpm();
  StreamingDecoder plain(*tok);
  EXPECT_EQ(plain.Push(2), "");
  StreamingDecoder special(*tok, /*special=*/true);
  EXPECT_EQ(special.Push(2), "</s>");
}

TEST(StreamingDecoderTest, ReassemblesRealBpeTokensOfEmojiAndCjk) {
  PAGODA_REQUIRE_TESTDATA("ggml-vocab-gpt-2.gguf");
  auto tok = testing::LoadTokenizerFromGguf(testing::TestDataPath("ggml-vocab-gpt-2.gguf"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::string text = "🦙 llamas 我想在apple工作 ½ é";
  const auto ids = (*tok)->Encode(text, false, false);
  StreamingDecoder dec(**tok);
  std::string out;
  bool held_something = false;
  for (TokenId id : ids) {
    const std::string part = dec.Push(id);
    held_something |= dec.pending_bytes() > 0;
    // Every chunk is valid UTF-8 on its own.
    EXPECT_EQ(part.find("\xEF\xBF\xBD"), std::string::npos);
    out += part;
  }
  out += dec.Flush();
  EXPECT_EQ(out, text);
  EXPECT_TRUE(held_something);  // GPT-2 splits these characters across tokens
}

}  // namespace
}  // namespace pagoda
