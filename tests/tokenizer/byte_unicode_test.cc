#include "tokenizer/byte_unicode.h"

#include <gtest/gtest.h>

#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

TEST(ByteUnicodeTest, MapsBytesLikeGpt2AndRoundTrips) {
  EXPECT_EQ(ByteToUnicode(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(ByteToUnicode('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(ByteToUnicode('A'), "A");
  EXPECT_EQ(ByteToUnicode(0xAD), "\xC5\x83");  // U+0143
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string enc;
  ByteEncode(all, &enc);
  EXPECT_TRUE(utf8::IsValid(enc));
  std::string dec;
  ByteDecode(enc, &dec);
  EXPECT_EQ(dec, all);
  EXPECT_EQ(UnicodeToByte(0x4E2D), -1);
}

}  // namespace
}  // namespace pagoda
