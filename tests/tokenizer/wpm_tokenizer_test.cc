// WordPiece ("bert"): the BERT normalizer and pre-tokenizer on their own, then
// the tokenizer on a tiny in-memory vocabulary and on ggml-vocab-bert-bge.
#include "tokenizer/wpm_tokenizer.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace pagoda {
namespace {

using ::testing::ElementsAre;
using testing::MakeWpmMetadata;

std::string Normalized(std::string_view text) {
  std::string out;
  AppendBertNormalized(text, &out);
  return out;
}

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string_view> views;
  SplitBertWords(text, &views);
  return {views.begin(), views.end()};
}

TEST(BertNormalizerTest, LowercasesAndStripsAccents) {
  EXPECT_EQ(Normalized("Hello WORLD"), "hello world");
  EXPECT_EQ(Normalized("F\xC3\xBChrer \xC3\x87" "a"), "fuhrer ca");  // Führer Ça
  EXPECT_EQ(Normalized("C\xE1\xBB\xAD" "a Vi\xE1\xBB\x87t"), "cua viet");  // Cửa Việt
  // Already decomposed: the combining acute (Mn) goes.
  EXPECT_EQ(Normalized("e\xCC\x81"), "e");
  // Greek with two marks: U+1F82 -> alpha.
  EXPECT_EQ(Normalized("\xE1\xBE\x82"), "\xCE\xB1");
  // Compatibility forms are left alone (NFD, not NFKD): 1/2 stays.
  EXPECT_EQ(Normalized("\xC2\xBD"), "\xC2\xBD");
  // Cyrillic lowercases.
  EXPECT_EQ(Normalized("\xD0\x91"), "\xD0\xB1");  // Б -> б
}

TEST(BertNormalizerTest, CleansControlAndWhiteSpace) {
  EXPECT_EQ(Normalized("a\tb\nc\rd"), "a b c d");
  // NUL, \v, \f, DEL and U+0085 are Cc and dropped, not turned into spaces.
  EXPECT_EQ(Normalized(std::string("a\0b\vc\fd\x7F" "e\xC2\x85" "f", 12)), "abcdef");
  // U+00A0, U+2003, U+3000 are white space; U+200B (Cf) and U+FFFD go.
  EXPECT_EQ(Normalized("a\xC2\xA0" "b\xE2\x80\x83" "c\xE3\x80\x80" "d"), "a b c d");
  EXPECT_EQ(Normalized("a\xE2\x80\x8B" "b\xEF\xBF\xBD" "c"), "abc");
}

TEST(BertNormalizerTest, PadsCjkIdeographsWithSpaces) {
  EXPECT_EQ(Normalized("\xE6\x88\x91\xE6\x83\xB3" "apple"), " \xE6\x88\x91  \xE6\x83\xB3 apple");
  // Hiragana and full-width forms are not CJK ideographs.
  EXPECT_EQ(Normalized("\xE3\x81\x82\xEF\xBD\x9E"), "\xE3\x81\x82\xEF\xBD\x9E");
}

TEST(BertNormalizerTest, KeepsInvalidBytes) {
  EXPECT_EQ(Normalized("A\xFF" "B\xC3"), "a\xFF" "b\xC3");
  EXPECT_EQ(Normalized("\xC3\x89\xE2\x82" "E"), "e\xE2\x82" "e");
}

TEST(BertPreTokenizerTest, SplitsOnWhiteSpaceAndAroundPunctuation) {
  EXPECT_THAT(Words("hello, world!!"), ElementsAre("hello", ",", "world", "!", "!"));
  EXPECT_THAT(Words("  y'all  "), ElementsAre("y", "'", "all"));
  // Every ASCII non-alphanumeric is punctuation, symbols included.
  EXPECT_THAT(Words("$5+x=`a`|~"), ElementsAre("$", "5", "+", "x", "=", "`", "a", "`", "|", "~"));
  // Unicode P* splits; other symbols (S*) do not.
  EXPECT_THAT(Words("\xC2\xAB" "hi\xC2\xBB"), ElementsAre("\xC2\xAB", "hi", "\xC2\xBB"));  // «hi»
  EXPECT_THAT(Words("\xE2\x82\xAC" "5 \xF0\x9F\xA6\x99.cpp"),  // €5 🦙.cpp
              ElementsAre("\xE2\x82\xAC" "5", "\xF0\x9F\xA6\x99", ".", "cpp"));
  EXPECT_THAT(Words("a\xFF" "b"), ElementsAre("a\xFF" "b"));
  EXPECT_TRUE(Words("   ").empty());
}

// Ids: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, then these from 5.
constexpr const char* kPieces[] = {
    "\xE2\x96\x81un",     // 5  un
    "aff",                // 6  ##aff
    "able",               // 7  ##able
    "\xE2\x96\x81unaff",  // 8  unaff
    "\xE2\x96\x81hello",  // 9  hello
    "\xE2\x96\x81,",      // 10 ,
    "\xE2\x96\x81world",  // 11 world
    "\xE2\x96\x81!",      // 12 !
    "\xE2\x96\x81it",     // 13 it
    "\xE2\x96\x81'",      // 14 '
    "\xE2\x96\x81s",      // 15 s
    "\xE2\x96\x81\xE6\x88\x91",  // 16 我
    "\xE2\x96\x81" "a",   // 17 a
    "a",                  // 18 ##a
    "\xE2\x96\x81" "cafe",  // 19 cafe
    "\xE2\x96\x81" "b",   // 20 b
};
constexpr TokenId kUnk = 1, kCls = 2, kSep = 3;

std::unique_ptr<Tokenizer> Small() {
  auto tok = Tokenizer::FromMetadata(MakeWpmMetadata({std::begin(kPieces), std::end(kPieces)}));
  PAGODA_CHECK(tok.ok()) << tok.status().ToString();
  return std::move(tok).value();
}

TEST(WpmTokenizerTest, LoadsBertIdsAndAddsClsAndSep) {
  auto tok = Small();
  EXPECT_EQ(tok->kind(), TokenizerKind::kWpm);
  EXPECT_EQ(tok->bos(), kCls);  // from tokenizer.ggml.cls_token_id
  EXPECT_EQ(tok->sep(), kSep);
  EXPECT_EQ(tok->unk(), kUnk);
  EXPECT_EQ(tok->eos(), kNoToken);
  EXPECT_THAT(tok->Encode("Hello", true, false), ElementsAre(kCls, 9, kSep));
  EXPECT_THAT(tok->Encode("", true, false), ElementsAre(kCls, kSep));
  EXPECT_THAT(tok->Encode("Hello", false, false), ElementsAre(9));
}

TEST(WpmTokenizerTest, MatchesLongestPieceFirst) {
  auto tok = Small();
  EXPECT_THAT(tok->Encode("unaffable", false, false), ElementsAre(8, 7));  // unaff ##able
  EXPECT_THAT(tok->Encode("unable", false, false), ElementsAre(5, 7));     // un ##able
  EXPECT_THAT(tok->Encode("aaa", false, false), ElementsAre(17, 18, 18));  // a ##a ##a
}

TEST(WpmTokenizerTest, SplitsPunctuationIntoWords) {
  auto tok = Small();
  EXPECT_THAT(tok->Encode("Hello, World!", false, false), ElementsAre(9, 10, 11, 12));
  EXPECT_THAT(tok->Encode("it's", false, false), ElementsAre(13, 14, 15));
}

TEST(WpmTokenizerTest, StripsAccentsBeforeMatching) {
  auto tok = Small();
  EXPECT_THAT(tok->Encode("Caf\xC3\xA9", false, false), ElementsAre(19));  // Café
  EXPECT_THAT(tok->Encode("CAFE\xCC\x81", false, false), ElementsAre(19));
}

TEST(WpmTokenizerTest, CjkIdeographsAreWordsOfTheirOwn) {
  auto tok = Small();
  // 我我a: each ideograph is a word, so "a" starts a word too.
  EXPECT_THAT(tok->Encode("\xE6\x88\x91\xE6\x88\x91" "a", false, false), ElementsAre(16, 16, 17));
}

TEST(WpmTokenizerTest, UnknownWordIsOneUnkWithoutPartialPieces) {
  auto tok = Small();
  // "un" matches, "x" does not: the whole word is [UNK], not "un [UNK]".
  EXPECT_THAT(tok->Encode("unx hello", false, false), ElementsAre(kUnk, 9));
  EXPECT_THAT(tok->Encode("\xF0\x9F\xA6\x99!", false, false), ElementsAre(kUnk, 12));
  // A continuation is never taken for a word start: "able" alone is unknown.
  EXPECT_THAT(tok->Encode("able", false, false), ElementsAre(kUnk));
  // U+2581 in the text does not make a continuation a word start.
  EXPECT_THAT(tok->Encode("a\xE2\x96\x81" "b", false, false), ElementsAre(kUnk));
}

TEST(WpmTokenizerTest, WordsOverAHundredCharactersAreUnknown) {
  auto tok = Small();
  EXPECT_EQ(tok->Encode(std::string(100, 'a'), false, false).size(), 100u);
  EXPECT_THAT(tok->Encode(std::string(101, 'a'), false, false), ElementsAre(kUnk));
  EXPECT_THAT(tok->Encode(std::string(101, 'a') + " a", false, false), ElementsAre(kUnk, 17));
}

TEST(WpmTokenizerTest, InvalidUtf8BecomesUnk) {
  auto tok = Small();
  EXPECT_THAT(tok->Encode("a\xFF hello \xC3", false, false), ElementsAre(kUnk, 9, kUnk));
}

TEST(WpmTokenizerTest, DecodesWithoutMarksAndCleansUpSpaces) {
  auto tok = Small();
  EXPECT_EQ(tok->Decode(tok->Encode("Hello, World!", true, false)), "hello, world!");
  EXPECT_EQ(tok->Decode(tok->Encode("unaffable it's", false, false)), "unaffable it's");
  EXPECT_EQ(tok->Decode(tok->Encode("Hello", true, false), /*special=*/true), "[CLS] hello [SEP]");
  // [UNK] is special: dropped unless asked for.
  EXPECT_EQ(tok->Decode(tok->Encode("zzz hello", false, false)), "hello");
  EXPECT_EQ(tok->Decode(tok->Encode("zzz hello", false, false), true), "[UNK] hello");
  EXPECT_EQ(tok->TokenToPiece(9, false), " hello");
  EXPECT_EQ(tok->TokenToPiece(7, false), "able");
}

TEST(WpmTokenizerTest, BgeVocabularyAddsClsAndSep) {
  PAGODA_REQUIRE_TESTDATA("ggml-vocab-bert-bge.gguf");
  auto tok = testing::LoadTokenizerFromGguf(testing::TestDataPath("ggml-vocab-bert-bge.gguf"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab_size(), 30522);
  EXPECT_EQ((*tok)->bos(), 101);
  EXPECT_EQ((*tok)->sep(), 102);
  EXPECT_EQ((*tok)->unk(), 100);
  EXPECT_EQ((*tok)->pad(), 0);
  EXPECT_THAT((*tok)->Encode("Hello world", true, false), ElementsAre(101, 7592, 2088, 102));
  EXPECT_EQ((*tok)->Decode((*tok)->Encode(" Hello, WORLD! ", true, false)), "hello, world!");
}

}  // namespace
}  // namespace pagoda
