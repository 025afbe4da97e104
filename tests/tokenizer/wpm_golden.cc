// Golden test for the WordPiece (bert) tokenizer against transformers.js: the
// vocabulary of ../shared/testdata/ggml-vocab-bert-bge.gguf is written back
// as the tokenizer.json Hugging Face ships for bge-small-en-v1.5 (no npm
// package ships a BERT tokenizer.json), @lenml/tokenizers encodes the shared
// corpus plus BERT-specific cases with it (npm/wordpiece_reference.js, which
// corrects two departures of transformers.js from the Rust tokenizers crate:
// CJK outside the BMP, unassigned code points), and pagoda's tokenizer,
// loaded from the GGUF itself, must give the same ids.
// The llama.cpp .inp/.out vectors of the same vocabulary are checked in
// tokenizer_golden_test.cc. Needs `npm ci` in tests/tokenizer/npm and `node`;
// skips otherwise (same executable and labels as hf_import_golden.cc).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "npm_golden_util.h"
#include "tokenizer_test_util.h"

namespace pagoda {
namespace {

using Json = nlohmann::json;
using testing::ExpectSameIdsAsReference;
using testing::NodeReferenceSkipReason;
using testing::NpmReferenceDir;
using testing::RunShell;

// GGUF token_type values (llama.cpp's llama_token_type).
constexpr int32_t kControl = 3;

// llama.cpp's converter marks each word-start WordPiece with U+2581 and drops
// the "##" of continuations; special tokens ("[CLS]") are kept as they are.
// This undoes it, giving vocab.txt's spelling back.
std::string HfSpelling(const std::string& gguf_token, int32_t type) {
  static const std::string kMark = "\u2581";
  if (type == kControl) return gguf_token;
  if (gguf_token.rfind(kMark, 0) == 0) return gguf_token.substr(kMark.size());
  return "##" + gguf_token;
}

// bge-small-en-v1.5's tokenizer.json, with the vocabulary of `path`.
Result<Json> BgeTokenizerJson(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  PAGODA_ASSIGN_OR_RETURN(std::vector<std::string> tokens, file->metadata().GetStringArray("tokenizer.ggml.tokens"));
  PAGODA_ASSIGN_OR_RETURN(std::vector<int64_t> types, file->metadata().GetIntArray("tokenizer.ggml.token_type"));
  if (types.size() != tokens.size()) return InvalidArgument("token_type and tokens differ in length");
  Json vocab = Json::object();
  Json added = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string spelling = HfSpelling(tokens[i], static_cast<int32_t>(types[i]));
    if (vocab.contains(spelling)) return InvalidArgument("two tokens spell " + spelling);
    vocab[spelling] = i;
    if (types[i] == kControl) {
      added.push_back({{"id", i}, {"content", spelling}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", true}});
    }
  }
  return Json{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
        {"strip_accents", nullptr}, {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100}, {"vocab", vocab}}},
  };
}

TEST(WpmGoldenTest, MatchesTransformersJsBertTokenizer) {
  const std::string skip = NodeReferenceSkipReason({"@lenml/tokenizers"});
  if (!skip.empty()) GTEST_SKIP() << skip;
  const std::string gguf = testing::TestDataPath("ggml-vocab-bert-bge.gguf");
  auto json = BgeTokenizerJson(gguf);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  const auto dir = std::filesystem::path(PAGODA_BINARY_DIR) / "tokenizer_golden";
  std::filesystem::create_directories(dir);
  const auto tokenizer_json = dir / "bert-bge.tokenizer.json";
  const auto golden = dir / "bert-bge.jsonl";
  std::ofstream(tokenizer_json) << json->dump();
  std::string out;
  const std::string cmd = "cd '" + NpmReferenceDir().string() + "' && node wordpiece_reference.js '" +
                          tokenizer_json.string() + "' '" + golden.string() + "'";
  ASSERT_EQ(RunShell(cmd, &out), 0) << cmd << "\n" << out;
  std::vector<Json> entries;
  std::ifstream in(golden);
  for (std::string line; std::getline(in, line);) entries.push_back(Json::parse(line));

  auto tok = testing::LoadTokenizerFromGguf(gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const int corpus = ExpectSameIdsAsReference("bert-bge", **tok, entries,
                                              [](const std::string& cat) { return cat != "bert"; },
                                              "@lenml/tokenizers' BertTokenizer");
  EXPECT_GE(corpus, 2000) << "corpus too small";
  EXPECT_GE(ExpectSameIdsAsReference("bert-bge", **tok, entries,
                                     [](const std::string& cat) { return cat == "bert"; },
                                     "@lenml/tokenizers' BertTokenizer"),
            30);
  // The reference replaces two methods of transformers.js's BertNormalizer
  // with the Rust crate's definitions (see wordpiece_reference.js); the stock
  // ids may differ only on text with the code points those concern.
  int stock_differs = 0;
  for (const Json& e : entries) {
    if (e["stock_ids"] == e["ids"]) continue;
    ++stock_differs;
    EXPECT_TRUE(e["js_divergence"].get<bool>()) << "stock transformers.js differs on " << e["text"].dump();
  }
  EXPECT_GT(stock_differs, 0) << "the corpus no longer holds a case of the corrected divergences";
}

}  // namespace
}  // namespace pagoda
