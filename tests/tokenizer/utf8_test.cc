#include "tokenizer/utf8.h"

#include <gtest/gtest.h>


namespace pagoda {
namespace {

TEST(Utf8Test, ValidSeqLenRejectsMalformedSequences) {
  EXPECT_EQ(utf8::ValidSeqLen("a", 0), 1u);
  EXPECT_EQ(utf8::ValidSeqLen("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8::ValidSeqLen("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(utf8::ValidSeqLen("\xF0\x9F\xA6\x99", 0), 4u);
  EXPECT_EQ(utf8::ValidSeqLen("\xC0\x80", 0), 0u);          // overlong
  EXPECT_EQ(utf8::ValidSeqLen("\xE0\x80\x80", 0), 0u);      // overlong
  EXPECT_EQ(utf8::ValidSeqLen("\xED\xA0\x80", 0), 0u);      // surrogate
  EXPECT_EQ(utf8::ValidSeqLen("\xF4\x90\x80\x80", 0), 0u);  // > U+10FFFF
  EXPECT_EQ(utf8::ValidSeqLen("\xE2\x82", 0), 0u);          // truncated
  EXPECT_EQ(utf8::ValidSeqLen("\x80", 0), 0u);
  EXPECT_EQ(utf8::ValidSeqLen("\xFF", 0), 0u);
  EXPECT_EQ(utf8::ValidSeqLen("a", 5), 0u);  // past the end
}

TEST(Utf8Test, IncompleteTailOnlyCountsCompletablePrefixes) {
  EXPECT_EQ(utf8::IncompleteTail(""), 0u);
  EXPECT_EQ(utf8::IncompleteTail("ab"), 0u);
  EXPECT_EQ(utf8::IncompleteTail("a\xC3"), 1u);
  EXPECT_EQ(utf8::IncompleteTail("a\xF0\x9F\xA6"), 3u);
  EXPECT_EQ(utf8::IncompleteTail("\xF0\x9F\xA6\x99"), 0u);  // complete
  EXPECT_EQ(utf8::IncompleteTail("a\xFF"), 0u);              // never valid
  EXPECT_EQ(utf8::IncompleteTail("\xE0\x80"), 0u);           // bad second byte
  EXPECT_EQ(utf8::IncompleteTail("\x80\x80"), 0u);
}

TEST(Utf8Test, SanitizeReplacesEachInvalidByte) {
  std::string out;
  utf8::AppendSanitized(&out, "a\xFF\xC3(\xE2\x82\xAC");
  EXPECT_EQ(out, "a\xEF\xBF\xBD\xEF\xBF\xBD(\xE2\x82\xAC");
  EXPECT_TRUE(utf8::IsValid(out));
  EXPECT_FALSE(utf8::IsValid("\xC3"));
}

}  // namespace
}  // namespace pagoda
