// Conformance against llama.cpp's tokenizer test vectors (ggml-vocab-*.gguf
// with .inp/.out, produced by Hugging Face tokenizers; bert-bge by
// BertTokenizer(Fast) of BAAI/bge-small-en-v1.5) and against the prompt ids
// llama.cpp recorded for stories260K.
#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace pagoda {
namespace {

using testing::LoadTokenizerFromGguf;
using testing::TestDataPath;

std::string Show(const std::vector<TokenId>& ids) {
  std::string s;
  for (TokenId id : ids) s += std::to_string(id) + " ";
  return s;
}

class GgmlVocabTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GgmlVocabTest, EncodesTestVectorsExactlyAndDecodesBack) {
  const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
  PAGODA_REQUIRE_TESTDATA(name);
  PAGODA_REQUIRE_TESTDATA(name + ".inp");
  auto tok = LoadTokenizerFromGguf(TestDataPath(name));
  if (!tok.ok() && tok.status().code() == StatusCode::kUnimplemented) {
    GTEST_SKIP() << name << ": " << tok.status().ToString();
  }
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const auto inputs = testing::ReadVocabInputs(TestDataPath(name + ".inp"));
  const auto expected = testing::ReadVocabOutputs(TestDataPath(name + ".out"));
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GE(inputs.size(), 40u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<TokenId> ids = (*tok)->Encode(inputs[i], /*add_special=*/false,
                                                    /*parse_special=*/false);
    EXPECT_EQ(ids, expected[i]) << "case " << i << " text '" << inputs[i] << "'\n got      "
                                << Show(ids) << "\n expected " << Show(expected[i]);
    if ((*tok)->kind() == TokenizerKind::kWpm) {
      // WordPiece is lossy (lowercase, accents stripped, [UNK], white space
      // collapsed), so no round trip. The decoded text carries no word-start
      // marks and, without [UNK], encodes back to the same ids.
      const std::string text = (*tok)->Decode(ids);
      EXPECT_TRUE(utf8::IsValid(text)) << "case " << i;
      EXPECT_EQ(text.find("\u2581"), std::string::npos) << "case " << i << ": " << text;
      if (std::find(ids.begin(), ids.end(), (*tok)->unk()) == ids.end()) {
        EXPECT_EQ((*tok)->Encode(text, false, false), ids) << "case " << i << ": " << text;
      }
      continue;
    }
    // The other vocabularies here are lossless on these strings: SPM has byte
    // fallback and strips the one space prefix it adds; byte-level BPE covers
    // all 256 bytes. (No clean-up of spaces around punctuation is applied.)
    EXPECT_EQ((*tok)->Decode(ids), inputs[i]) << "case " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgmlVocabTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "mpt", "falcon",
                                           "starcoder", "refact", "deepseek-coder", "deepseek-llm",
                                           "bert-bge"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

// Vocabularies without upstream vectors still load and round-trip text.
class GgmlVocabLoadTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GgmlVocabLoadTest, LoadsAndRoundTrips) {
  const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
  PAGODA_REQUIRE_TESTDATA(name);
  auto tok = LoadTokenizerFromGguf(TestDataPath(name));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  for (const std::string text : {"Hello world", " leading space", "tabs\tand\nnewlines\n\n",
                                 "数字 123456 and émojis 🦙"}) {
    const auto ids = (*tok)->Encode(text, false, false);
    EXPECT_FALSE(ids.empty());
    EXPECT_EQ((*tok)->Decode(ids), text);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgmlVocabLoadTest, ::testing::Values("baichuan", "gpt-neox"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

TEST(Stories260KTokenizerTest, PromptsMatchLlamaCppIdsWithBos) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  PAGODA_REQUIRE_TESTDATA("stories260K.reference.json");
  auto tok = LoadTokenizerFromGguf(TestDataPath("stories260K.gguf"));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab_size(), 512);
  EXPECT_EQ((*tok)->bos(), 1);
  EXPECT_EQ((*tok)->eos(), 2);
  EXPECT_TRUE((*tok)->add_bos());
  EXPECT_TRUE((*tok)->IsEog(2));

  std::ifstream f(TestDataPath("stories260K.reference.json"));
  const auto ref = nlohmann::json::parse(f);
  ASSERT_GE(ref["cases"].size(), 1u);
  for (const auto& c : ref["cases"]) {
    const std::string prompt = c["prompt"];
    const auto want = c["prompt_token_ids"].get<std::vector<TokenId>>();
    const auto ids = (*tok)->Encode(prompt, /*add_special=*/true, /*parse_special=*/true);
    EXPECT_EQ(ids, want) << "prompt '" << prompt << "'";
    if (c.contains("prompt_pieces")) {
      const auto pieces = c["prompt_pieces"].get<std::vector<std::string>>();
      for (size_t i = 0; i < pieces.size() && i < ids.size(); ++i) {
        EXPECT_EQ((*tok)->TokenToPiece(ids[i], /*special=*/true), pieces[i]) << "prompt '" << prompt << "' #" << i;
      }
    }
    EXPECT_EQ((*tok)->Decode(ids), prompt);
    // The generated ids decode to the recorded text.
    if (c.contains("generated_token_ids") && c.contains("generated_text")) {
      const auto gen = c["generated_token_ids"].get<std::vector<TokenId>>();
      std::string text;
      for (TokenId id : gen) text += (*tok)->TokenToPiece(id, false);
      EXPECT_EQ(text, c["generated_text"].get<std::string>()) << "prompt '" << prompt << "'";
    }
  }
}

}  // namespace
}  // namespace pagoda
