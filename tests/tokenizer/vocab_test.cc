// Metadata validation: every malformed or missing key is an error naming it.
#include "tokenizer/vocab.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace pagoda {
namespace {

using ::testing::HasSubstr;
using testing::MakeBpeMetadata;
using testing::MakeSpmMetadata;
using testing::MakeWpmMetadata;

Status BuildError(const GgufMetadata& md) {
  auto tok = Tokenizer::FromMetadata(md);
  return tok.ok() ? Status::Ok() : tok.status();
}

TEST(VocabTest, MissingModelKeyIsNamed) {
  GgufMetadata md = MakeSpmMetadata({"a"});
  md.Erase("tokenizer.ggml.model");
  const Status st = BuildError(md);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("tokenizer.ggml.model"));
}

TEST(VocabTest, MissingOrMistypedTokensAreNamed) {
  GgufMetadata md = MakeSpmMetadata({"a"});
  md.Erase("tokenizer.ggml.tokens");
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.tokens"));
  md.Set("tokenizer.ggml.tokens", int32_t{5});
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.tokens"));
  md.Set("tokenizer.ggml.tokens", GgufValue::StringArray({}));
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.tokens"));
}

TEST(VocabTest, MismatchedArrayLengthsAreNamed) {
  GgufMetadata md = MakeSpmMetadata({"a"});
  md.Set("tokenizer.ggml.scores", GgufValue::F32Array({0.0f, 1.0f}));
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.scores"));
  md = MakeSpmMetadata({"a"});
  md.Set("tokenizer.ggml.token_type", GgufValue::I32Array({1}));
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.token_type"));
}

TEST(VocabTest, OutOfRangeSpecialIdsAreNamed) {
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.eot_token_id"}) {
    GgufMetadata md = MakeSpmMetadata({"a"});
    md.Set(key, uint32_t{100000});
    const Status st = BuildError(md);
    EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << key;
    EXPECT_THAT(st.message(), HasSubstr(key));
  }
  // uint32(-1) is how converters write "none".
  GgufMetadata md = MakeSpmMetadata({"a"});
  md.Set("tokenizer.ggml.seperator_token_id", uint32_t{0xFFFFFFFF});
  md.Set("tokenizer.ggml.padding_token_id", uint32_t{0xFFFFFFFF});
  EXPECT_TRUE(BuildError(md).ok());
}

TEST(VocabTest, AddEosWithoutEosIsAnError) {
  GgufMetadata md = MakeBpeMetadata({"a b"}, "gpt-2");
  md.Set("tokenizer.ggml.add_eos_token", true);
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.eos_token_id"));
  md.Set("tokenizer.ggml.add_eos_token", int32_t{1});  // wrong type
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.add_eos_token"));
}

TEST(VocabTest, MalformedOrMissingMergesAreNamed) {
  GgufMetadata md = MakeBpeMetadata({"a b"}, "gpt-2");
  md.Set("tokenizer.ggml.merges", GgufValue::StringArray({"a b", "abc"}));
  Status st = BuildError(md);
  EXPECT_THAT(st.message(), HasSubstr("tokenizer.ggml.merges"));
  EXPECT_THAT(st.message(), HasSubstr("entry 1"));
  md.Set("tokenizer.ggml.merges", GgufValue::StringArray({"a "}));
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.merges"));
  md.Erase("tokenizer.ggml.merges");
  EXPECT_THAT(BuildError(md).message(), HasSubstr("tokenizer.ggml.merges"));
}

TEST(VocabTest, UnknownPreTokenizerIsNamed) {
  const Status st = BuildError(MakeBpeMetadata({"a b"}, "no-such-pre"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("tokenizer.ggml.pre"));
  EXPECT_THAT(st.message(), HasSubstr("no-such-pre"));
}

TEST(VocabTest, UnsupportedAndUnknownModels) {
  GgufMetadata md = MakeSpmMetadata({"a"});
  md.Set("tokenizer.ggml.model", "t5");
  EXPECT_EQ(BuildError(md).code(), StatusCode::kUnimplemented);
  md.Set("tokenizer.ggml.model", "klingon");
  EXPECT_EQ(BuildError(md).code(), StatusCode::kInvalidArgument);
}

TEST(VocabTest, DefaultsFollowTheTokenizerKind) {
  auto spm = Vocab::Load(MakeSpmMetadata({"a"}), TokenizerKind::kSpm);
  ASSERT_TRUE(spm.ok()) << spm.status().ToString();
  EXPECT_EQ(spm->bos, 1);
  EXPECT_EQ(spm->eos, 2);
  EXPECT_EQ(spm->unk, 0);
  EXPECT_TRUE(spm->add_bos);
  EXPECT_TRUE(spm->add_space_prefix);
  EXPECT_EQ(spm->Find("a"), 3 + 256);
  EXPECT_EQ(spm->Find("zz"), kNoToken);

  auto bpe = Vocab::Load(MakeBpeMetadata({"a b"}, "gpt-2"), TokenizerKind::kBpe);
  ASSERT_TRUE(bpe.ok()) << bpe.status().ToString();
  EXPECT_EQ(bpe->bos, kNoToken);
  EXPECT_FALSE(bpe->add_bos);
  EXPECT_FALSE(bpe->add_space_prefix);

  // WordPiece: llama.cpp's BERT ids when the keys are absent (and fit).
  std::vector<std::string> pieces;
  for (int i = 0; i < 200; ++i) pieces.push_back("\xE2\x96\x81w" + std::to_string(i));
  GgufMetadata bert = MakeWpmMetadata(pieces);
  for (const char* key : {"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.cls_token_id",
                          "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id"}) {
    bert.Erase(key);
  }
  auto wpm = Vocab::Load(bert, TokenizerKind::kWpm);
  ASSERT_TRUE(wpm.ok()) << wpm.status().ToString();
  EXPECT_EQ(wpm->bos, 101);
  EXPECT_EQ(wpm->unk, 100);
  EXPECT_EQ(wpm->sep, 102);
  EXPECT_EQ(wpm->pad, 0);
  EXPECT_EQ(wpm->eos, kNoToken);
  EXPECT_TRUE(wpm->add_bos);
  EXPECT_TRUE(wpm->add_sep);
  EXPECT_FALSE(wpm->add_eos);
  EXPECT_FALSE(wpm->add_space_prefix);

  GgufMetadata no_prefix = MakeSpmMetadata({"a"});
  no_prefix.Set("tokenizer.ggml.add_space_prefix", false);
  auto v = Vocab::Load(no_prefix, TokenizerKind::kSpm);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->add_space_prefix);
}

}  // namespace
}  // namespace pagoda
