// NFC normalization (utf8proc underneath) and the metadata that selects it.
#include "tokenizer/normalizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagoda {
namespace {

using ::testing::HasSubstr;

std::string Nfc(std::string_view s) {
  std::string out = "prefix:";  // AppendNfc appends
  AppendNfc(s, &out);
  return out.substr(7);
}

TEST(NormalizerTest, ComposesDecomposedText) {
  EXPECT_EQ(Nfc("caf" "e\xCC\x81"), "caf\xC3\xA9");                       // e + U+0301 -> é
  EXPECT_EQ(Nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> 각
  EXPECT_EQ(Nfc("\xE2\x84\xAA"), "K");                                     // KELVIN SIGN (singleton)
  // Canonical order of marks: U+0323 (ccc 220) before U+0307 (ccc 230), then
  // composition gives U+1E0D U+0307 for d + dot below + dot above.
  EXPECT_EQ(Nfc("d\xCC\x87\xCC\xA3"), "\xE1\xB8\x8D\xCC\x87");
}

TEST(NormalizerTest, LeavesNfcTextAlone) {
  const std::string nfc[] = {"", "hello world", "caf\xC3\xA9", "\xE4\xB8\xAD\xE6\x96\x87",
                             "\xF0\x9F\xA6\x99 emoji", std::string("nul\0byte", 8)};
  for (const std::string& s : nfc) {
    EXPECT_EQ(Nfc(s), s);
  }
}

TEST(NormalizerTest, KeepsInvalidBytesAndDoesNotComposeAcrossThem) {
  EXPECT_EQ(Nfc("e\xCC\x81\xFF" "e\xCC\x81"), "\xC3\xA9\xFF\xC3\xA9");
  // The combining mark is separated from its base by an invalid byte.
  EXPECT_EQ(Nfc("e\xFF\xCC\x81"), "e\xFF\xCC\x81");
  // Truncated sequence and a surrogate: copied byte for byte.
  EXPECT_EQ(Nfc("\xCC"), "\xCC");
  EXPECT_EQ(Nfc("a\xED\xA0\x80" "e\xCC\x81"), "a\xED\xA0\x80\xC3\xA9");
}

TEST(NormalizerTest, FastPathBoundaryIsU0300) {
  EXPECT_FALSE(MayChangeUnderNfc("plain ASCII"));
  EXPECT_FALSE(MayChangeUnderNfc("\xCB\xBF"));  // U+02FF
  EXPECT_TRUE(MayChangeUnderNfc("\xCC\x80"));   // U+0300
  EXPECT_TRUE(MayChangeUnderNfc("\xE2\x84\xAA"));
}

TEST(NormalizerTest, ReadsKeyAndDefaultsToNfcForQwen2Only) {
  GgufMetadata md;
  EXPECT_EQ(*ReadNormalization(md, "qwen2"), Normalization::kNfc);
  EXPECT_EQ(*ReadNormalization(md, "llama-bpe"), Normalization::kNone);
  EXPECT_EQ(*ReadNormalization(md, ""), Normalization::kNone);
  md.Set(kKeyNormalizer, "none");
  EXPECT_EQ(*ReadNormalization(md, "qwen2"), Normalization::kNone);
  md.Set(kKeyNormalizer, "nfc");
  EXPECT_EQ(*ReadNormalization(md, "gpt-2"), Normalization::kNfc);
  md.Set(kKeyNormalizer, "nfkc");
  auto bad = ReadNormalization(md, "gpt-2");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("tokenizer.pagoda.normalizer"));
  EXPECT_THAT(bad.status().message(), HasSubstr("nfkc"));
  md.Set(kKeyNormalizer, uint32_t{1});
  EXPECT_FALSE(ReadNormalization(md, "gpt-2").ok());
}

}  // namespace
}  // namespace pagoda
