// Tokenizer facade on small in-memory vocabularies: SPM and BPE encoding,
// BOS/EOS rules, special-token parsing, decoding and hostile input.
#include "tokenizer/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer_test_util.h"

namespace pagoda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeBpeMetadata;
using testing::MakeSpmMetadata;

constexpr TokenId kFirstPiece = 3 + 256;  // after <unk> <s> </s> and the bytes

std::unique_ptr<Tokenizer> MustBuild(const GgufMetadata& md) {
  auto tok = Tokenizer::FromMetadata(md);
  PAGODA_CHECK(tok.ok()) << tok.status().ToString();
  return std::move(tok).value();
}

// "▁" "a" "b" "c" "▁a" "ab" "▁ab" "bc", scored best first.
GgufMetadata SmallSpm(const std::vector<std::pair<std::string, TokenAttr>>& extra = {}) {
  return MakeSpmMetadata({"\xE2\x96\x81", "a", "b", "c", "\xE2\x96\x81" "a", "ab",
                          "\xE2\x96\x81" "ab", "bc"},
                         extra);
}
constexpr TokenId kSpace = kFirstPiece + 0, kA = kFirstPiece + 1, kC = kFirstPiece + 3,
                  kSpaceAb = kFirstPiece + 6;

TEST(TokenizerTest, SpmMergesHighestScoringPairFirstWithSpacePrefix) {
  auto tok = MustBuild(SmallSpm());
  EXPECT_EQ(tok->kind(), TokenizerKind::kSpm);
  EXPECT_THAT(tok->Encode("ab", false, false), ElementsAre(kSpaceAb));
  EXPECT_THAT(tok->Encode("abc", false, false), ElementsAre(kSpaceAb, kC));
  EXPECT_THAT(tok->Encode("a a", false, false), ElementsAre(kFirstPiece + 4, kFirstPiece + 4));
  EXPECT_TRUE(tok->Encode("", false, false).empty());
}

TEST(TokenizerTest, SpmAddsBosByDefaultAndEosWhenAsked) {
  GgufMetadata md = SmallSpm();
  EXPECT_THAT(MustBuild(md)->Encode("a", true, false), ElementsAre(1, kFirstPiece + 4));
  EXPECT_THAT(MustBuild(md)->Encode("", true, false), ElementsAre(1));
  md.Set("tokenizer.ggml.add_eos_token", true);
  md.Set("tokenizer.ggml.add_bos_token", false);
  EXPECT_THAT(MustBuild(md)->Encode("a", true, false), ElementsAre(kFirstPiece + 4, 2));
}

TEST(TokenizerTest, SpmFallsBackToByteTokensAndDecodesThemBack) {
  auto tok = MustBuild(SmallSpm());
  // "é" is not a piece: its two bytes become <0xC3> <0xA9>.
  EXPECT_THAT(tok->Encode("é", false, false), ElementsAre(kSpace, 3 + 0xC3, 3 + 0xA9));
  EXPECT_EQ(tok->Decode(tok->Encode("é", false, false)), "é");
  EXPECT_EQ(tok->TokenToPiece(3 + 0xC3, false), "\xC3");
}

TEST(TokenizerTest, SpmEncodesInvalidUtf8ByteByByteAndLosslessly) {
  auto tok = MustBuild(SmallSpm());
  const std::string text = "a\xFF\xC3(b\xE2\x82";
  const auto ids = tok->Encode(text, false, false);
  EXPECT_THAT(ids, ElementsAre(kFirstPiece + 4, 3 + 0xFF, 3 + 0xC3, 3 + '(', kFirstPiece + 2,
                               3 + 0xE2, 3 + 0x82));
  EXPECT_EQ(tok->Decode(ids), text);
}

TEST(TokenizerTest, SpmDecodeRemovesOnlyTheAddedSpace) {
  auto tok = MustBuild(SmallSpm());
  for (const std::string text : {"ab", " ab", "  a b ", "abc"}) {
    EXPECT_EQ(tok->Decode(tok->Encode(text, true, false)), text) << "'" << text << "'";
    EXPECT_EQ(tok->Decode(tok->Encode(text, false, false)), text) << "'" << text << "'";
  }
  EXPECT_EQ(tok->Decode({1, kSpaceAb}, /*special=*/true), "<s>ab");
}

TEST(TokenizerTest, SpmParsesSpecialTokensOnlyWhenAsked) {
  auto tok = MustBuild(SmallSpm());
  // With parse_special "</s>" is EOS, and the text after it gets a new space
  // prefix (llama.cpp's rule).
  EXPECT_THAT(tok->Encode("a</s>b", false, true),
              ElementsAre(kFirstPiece + 4, 2, kFirstPiece + 0, kFirstPiece + 2));
  // Without it the same characters are plain text.
  const auto plain = tok->Encode("a</s>b", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(tok->Decode(plain), "a</s>b");
}

TEST(TokenizerTest, UserDefinedTokensMatchEvenWithoutParseSpecial) {
  auto tok = MustBuild(SmallSpm({{"<tool>", TokenAttr::kUserDefined},
                                 {"<tool_call>", TokenAttr::kUserDefined},
                                 {"<ctl>", TokenAttr::kControl}}));
  const TokenId tool = tok->FindToken("<tool>");
  const TokenId tool_call = tok->FindToken("<tool_call>");
  const TokenId ctl = tok->FindToken("<ctl>");
  // Longest match wins.
  EXPECT_THAT(tok->Encode("<tool_call>", false, false), ElementsAre(tool_call));
  EXPECT_THAT(tok->Encode("<tool><ctl>", false, true), ElementsAre(tool, ctl));
  const auto no_parse = tok->Encode("<tool><ctl>", false, false);
  EXPECT_EQ(no_parse.front(), tool);
  EXPECT_EQ(std::count(no_parse.begin(), no_parse.end(), ctl), 0);
  // User-defined text is output; control text only with special.
  EXPECT_EQ(tok->TokenToPiece(tool, false), "<tool>");
  EXPECT_EQ(tok->TokenToPiece(ctl, false), "");
  EXPECT_EQ(tok->TokenToPiece(ctl, true), "<ctl>");
}

TEST(TokenizerTest, SpmUserDefinedTokensDecodeSpaceMarksAsSpaces) {
  // Gemma's added tokens 138-167 are runs of U+2581.
  auto tok = MustBuild(SmallSpm({{"\xE2\x96\x81\xE2\x96\x81", TokenAttr::kUserDefined},
                                 {"<ctl\xE2\x96\x81>", TokenAttr::kControl}}));
  const TokenId two = tok->FindToken("\xE2\x96\x81\xE2\x96\x81");
  const TokenId ctl = tok->FindToken("<ctl\xE2\x96\x81>");
  EXPECT_EQ(tok->TokenToPiece(two, false), "  ");
  EXPECT_EQ(tok->Decode({kA, two, kA}), "a  a");
  // Control tokens stay as written.
  EXPECT_EQ(tok->TokenToPiece(ctl, true), "<ctl\xE2\x96\x81>");
}

TEST(TokenizerTest, EndOfGenerationSetIncludesChatMarkers) {
  auto tok = MustBuild(SmallSpm({{"<|im_end|>", TokenAttr::kUserDefined},
                                 {"<end_of_turn>", TokenAttr::kControl},
                                 {"<|im_start|>", TokenAttr::kControl}}));
  EXPECT_TRUE(tok->IsEog(2));
  EXPECT_TRUE(tok->IsEog(tok->FindToken("<|im_end|>")));
  EXPECT_TRUE(tok->IsEog(tok->FindToken("<end_of_turn>")));
  EXPECT_FALSE(tok->IsEog(tok->FindToken("<|im_start|>")));
  EXPECT_FALSE(tok->IsEog(kA));
  EXPECT_FALSE(tok->IsEog(-1));
  // An end-of-turn marker is treated as control whatever its stored type.
  EXPECT_EQ(tok->attr(tok->FindToken("<|im_end|>")), TokenAttr::kControl);
}

TEST(TokenizerTest, OutOfRangeIdsAreHarmless) {
  auto tok = MustBuild(SmallSpm());
  EXPECT_EQ(tok->TokenToPiece(-5, true), "");
  EXPECT_EQ(tok->TokenToPiece(1 << 30, true), "");
  EXPECT_EQ(tok->token_text(-1), "");
  EXPECT_EQ(tok->attr(99999), TokenAttr::kUndefined);
  EXPECT_EQ(tok->Decode({-1, 99999, kA}), "a");
}

// Byte-level BPE: "hello", " world" built by merges.
GgufMetadata SmallBpe(const std::string& pre = "gpt-2",
                      const std::vector<std::pair<std::string, TokenAttr>>& extra = {}) {
  return MakeBpeMetadata({"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or",
                          "\xC4\xA0wor l", "\xC4\xA0worl d"},
                         pre, extra);
}

TEST(TokenizerTest, BpeAppliesMergesByRank) {
  auto tok = MustBuild(SmallBpe());
  EXPECT_EQ(tok->kind(), TokenizerKind::kBpe);
  EXPECT_EQ(tok->pre(), "gpt-2");
  EXPECT_THAT(tok->Encode("hello world", false, false), ElementsAre(256 + 3, 256 + 8));
  EXPECT_THAT(tok->Encode("hello", true, false), ElementsAre(256 + 3));  // BPE: no BOS default
  EXPECT_EQ(tok->Decode(tok->Encode("hello world", false, false)), "hello world");
}

TEST(TokenizerTest, BpeBreaksRankTiesLeftmostAndPrefersLowerRank) {
  auto ab_first = MustBuild(MakeBpeMetadata({"a b", "b c"}, "gpt-2"));
  EXPECT_THAT(ab_first->Encode("abc", false, false), ElementsAre(256, 'c'));
  auto bc_first = MustBuild(MakeBpeMetadata({"b c", "a b"}, "gpt-2"));
  EXPECT_THAT(bc_first->Encode("abc", false, false), ElementsAre('a', 256));
  // "aaa": the same pair twice; the leftmost merges first.
  auto aa = MustBuild(MakeBpeMetadata({"a a"}, "gpt-2"));
  EXPECT_THAT(aa->Encode("aaa", false, false), ElementsAre(256, 'a'));
}

TEST(TokenizerTest, BpeIsLosslessOnArbitraryBytes) {
  auto tok = MustBuild(SmallBpe());
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  for (const std::string& text : {all, std::string("\xFF\xFE hello \xC3"), std::string("\0a\0", 3)}) {
    const auto ids = tok->Encode(text, false, true);
    EXPECT_EQ(tok->Decode(ids), text);
  }
}

TEST(TokenizerTest, BpeSpecialTokensAndEog) {
  auto tok = MustBuild(SmallBpe("llama-bpe", {{"<|begin_of_text|>", TokenAttr::kControl},
                                              {"<|eot_id|>", TokenAttr::kControl}}));
  const TokenId eot = tok->FindToken("<|eot_id|>");
  EXPECT_TRUE(tok->IsEog(eot));
  EXPECT_EQ(tok->eot(), eot);
  EXPECT_THAT(tok->Encode("hello<|eot_id|>", false, true), ElementsAre(256 + 3, eot));
  EXPECT_EQ(tok->Decode(tok->Encode("hello<|eot_id|>", false, true)), "hello");
  EXPECT_EQ(tok->Decode(tok->Encode("hello<|eot_id|>", false, true), true), "hello<|eot_id|>");
  // llama-bpe adds BOS by default, but this vocabulary names none: dropped.
  EXPECT_FALSE(tok->add_bos());
  GgufMetadata md = SmallBpe("llama-bpe", {{"<|begin_of_text|>", TokenAttr::kControl}});
  md.Set("tokenizer.ggml.bos_token_id", uint32_t{256 + 9});
  auto with_bos = MustBuild(md);
  EXPECT_TRUE(with_bos->add_bos());
  EXPECT_THAT(with_bos->Encode("hello", true, false), ElementsAre(256 + 9, 256 + 3));
}

// "é" (C3 A9) as one token, 256 + 9 after SmallBpe's merges.
GgufMetadata BpeWithEAcute(const std::string& pre) {
  GgufMetadata md = MakeBpeMetadata({"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r",
                                     "\xC4\xA0w or", "\xC4\xA0wor l", "\xC4\xA0worl d",
                                     "\xC3\x83 \xC2\xA9"},
                                    pre, {{"<tool>", TokenAttr::kUserDefined}});
  return md;
}
constexpr TokenId kEAcute = 256 + 9;

TEST(TokenizerTest, NfcNormalizerComposesTextBeforeEncoding) {
  GgufMetadata md = BpeWithEAcute("gpt-2");
  md.Set("tokenizer.pagoda.normalizer", "nfc");
  auto tok = MustBuild(md);
  EXPECT_EQ(tok->normalization(), Normalization::kNfc);
  EXPECT_THAT(tok->Encode("e\xCC\x81", false, false), ElementsAre(kEAcute));
  EXPECT_THAT(tok->Encode("\xC3\xA9", false, false), ElementsAre(kEAcute));
  EXPECT_EQ(tok->Decode(tok->Encode("caf" "e\xCC\x81", false, false)), "caf\xC3\xA9");
}

TEST(TokenizerTest, NfcLeavesSpecialTokensAndInvalidBytesAlone) {
  GgufMetadata md = BpeWithEAcute("gpt-2");
  md.Set("tokenizer.pagoda.normalizer", "nfc");
  auto tok = MustBuild(md);
  const TokenId tool = tok->FindToken("<tool>");
  // Specials are split off the raw text first; each side is normalized on
  // its own, so the mark after <tool> has nothing to compose with.
  EXPECT_THAT(tok->Encode("e<tool>\xCC\x81", false, false), ElementsAre('e', tool, 0xCC, 0x81));
  // Invalid bytes survive; the valid runs around them are still normalized.
  const std::string text = "e\xCC\x81\xFF" "e\xCC\x81\xC3";
  const auto ids = tok->Encode(text, false, false);
  EXPECT_EQ(tok->Decode(ids), "\xC3\xA9\xFF\xC3\xA9\xC3");
}

TEST(TokenizerTest, NfcIsTheDefaultForQwen2Only) {
  EXPECT_EQ(MustBuild(BpeWithEAcute("qwen2"))->normalization(), Normalization::kNfc);
  EXPECT_THAT(MustBuild(BpeWithEAcute("qwen2"))->Encode("e\xCC\x81", false, false),
              ElementsAre(kEAcute));
  auto gpt2 = MustBuild(BpeWithEAcute("gpt-2"));
  EXPECT_EQ(gpt2->normalization(), Normalization::kNone);
  EXPECT_THAT(gpt2->Encode("e\xCC\x81", false, false), ElementsAre('e', 0xCC, 0x81));
  EXPECT_EQ(MustBuild(SmallSpm())->normalization(), Normalization::kNone);
  // An explicit "none" wins over the qwen2 default.
  GgufMetadata md = BpeWithEAcute("qwen2");
  md.Set("tokenizer.pagoda.normalizer", "none");
  EXPECT_THAT(MustBuild(md)->Encode("e\xCC\x81", false, false), ElementsAre('e', 0xCC, 0x81));
}

TEST(TokenizerTest, RejectsUnknownNormalizer) {
  GgufMetadata md = SmallSpm();
  md.Set("tokenizer.pagoda.normalizer", "lowercase");
  auto tok = Tokenizer::FromMetadata(md);
  ASSERT_FALSE(tok.ok());
  EXPECT_THAT(tok.status().message(), HasSubstr("tokenizer.pagoda.normalizer"));
}

}  // namespace
}  // namespace pagoda
