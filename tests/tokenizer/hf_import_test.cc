// ImportHfTokenizer: unit tests on small hand-written tokenizer.json files.
// The golden tests on the real vocabularies, which run node, are in
// hf_import_golden.cc (a separate executable labelled "slow").
#include "tokenizer/hf_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A tiny byte-level BPE in the Llama 3 layout: "hello" and " world" are
// reachable by merges; ids 7..8 are added tokens, id 6 is a gap.
Json SmallByteLevel() {
  Json j = {
      {"version", "1.0"},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", kLlama3Regex}}}, {"behavior", "Isolated"}, {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}}},
      {"post_processor", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", {{"h", 0}, {"e", 1}, {"l", 2}, {"o", 3}, {"he", 4}, {"ll", 5}, {"hell", 9}, {"hello", 10}}},
        {"merges", {"h e", "l l", "he ll", "hell o"}}}},
      {"added_tokens",
       {{{"id", 7}, {"content", "<|eot_id|>"}, {"special", true}, {"normalized", false}},
        {{"id", 8}, {"content", "<think>"}, {"special", false}, {"normalized", false}}}},
  };
  return j;
}

// SentencePiece-style BPE (Gemma layout): ' ' -> U+2581, byte fallback.
Json SmallSpm() {
  Json vocab = {{"<pad>", 0}, {"<eos>", 1}, {"<bos>", 2}, {"<unk>", 3}, {"\u2581", 4}, {"a", 5}, {"b", 6},
                {"\u2581a", 7}, {"ab", 8}, {"\u2581ab", 9}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 10 + b;
  }
  Json j = {
      {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}},
      {"pre_tokenizer",
       {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {{{"SpecialToken", {{"id", "<bos>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}},
      {"model",
       {{"type", "BPE"}, {"unk_token", "<unk>"}, {"byte_fallback", true}, {"fuse_unk", true}, {"vocab", vocab},
        // Ranks: ▁a first, then ab, then ▁ab (two splits of it).
        {"merges", Json::array({Json::array({"\u2581", "a"}), Json::array({"a", "b"}),
                                Json::array({"\u2581", "ab"}), Json::array({"\u2581a", "b"})})}}},
      {"added_tokens",
       {{{"id", 0}, {"content", "<pad>"}, {"special", true}},
        {{"id", 1}, {"content", "<eos>"}, {"special", true}},
        {{"id", 2}, {"content", "<bos>"}, {"special", true}},
        {{"id", 3}, {"content", "<unk>"}, {"special", true}}}},
  };
  return j;
}

GgufMetadata ImportOk(const Json& j, const Json& cfg = Json()) {
  auto md = ImportHfTokenizer(j.dump(), cfg.is_null() ? "" : cfg.dump());
  EXPECT_TRUE(md.ok()) << md.status().ToString();
  return md.ok() ? std::move(md).value() : GgufMetadata();
}

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/tokenizer/fixtures" / name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status ImportError(const Json& j, const Json& cfg = Json()) {
  auto md = ImportHfTokenizer(j.dump(), cfg.is_null() ? "" : cfg.dump());
  EXPECT_FALSE(md.ok());
  return md.ok() ? Status::Ok() : md.status();
}

TEST(HfImportTest, MapsByteLevelBpeToGpt2WithRecognisedPre) {
  GgufMetadata md = ImportOk(SmallByteLevel());
  EXPECT_EQ(*md.GetString("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*md.GetString("tokenizer.ggml.pre"), "llama-bpe");
  EXPECT_THAT(*md.GetStringArray("tokenizer.ggml.tokens"),
              ElementsAre("h", "e", "l", "o", "he", "ll", "[PAD6]", "<|eot_id|>", "<think>", "hell", "hello"));
  // normal, gap -> unused, special -> control, non-special -> user-defined.
  EXPECT_THAT(*md.GetIntArray("tokenizer.ggml.token_type"), ElementsAre(1, 1, 1, 1, 1, 1, 5, 3, 4, 1, 1));
  EXPECT_THAT(*md.GetStringArray("tokenizer.ggml.merges"), ElementsAre("h e", "l l", "he ll", "hell o"));
  EXPECT_FALSE(md.Has("tokenizer.ggml.scores"));
  EXPECT_FALSE(md.Has("tokenizer.ggml.add_bos_token"));  // nothing in the files says
}

TEST(HfImportTest, AcceptsMergesAsPairs) {
  Json j = SmallByteLevel();
  j["model"]["merges"] = Json::array({Json::array({"h", "e"}), Json::array({"l", "l"})});
  EXPECT_THAT(*ImportOk(j).GetStringArray("tokenizer.ggml.merges"), ElementsAre("h e", "l l"));
}

TEST(HfImportTest, ImportedByteLevelTokenizerEncodes) {
  auto tok = Tokenizer::FromMetadata(ImportOk(SmallByteLevel()));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_THAT((*tok)->Encode("hello<|eot_id|>hell<think>", false, true), ElementsAre(10, 7, 9, 8));
}

TEST(HfImportTest, RecognisesQwen2AndDeepseekV3Regexes) {
  Json j = SmallByteLevel();
  std::string qwen = kLlama3Regex;
  qwen.replace(qwen.find("\\p{N}{1,3}"), 10, "\\p{N}");
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = qwen;
  j["model"]["ignore_merges"] = false;
  EXPECT_EQ(*ImportOk(j).GetString("tokenizer.ggml.pre"), "qwen2");

  Json split = j["pre_tokenizer"]["pretokenizers"][0];
  Json byte_level = j["pre_tokenizer"]["pretokenizers"][1];
  Json seq = Json::array();
  for (const char* re : {"\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                         "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
                         "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}) {
    split["pattern"]["Regex"] = re;
    seq.push_back(split);
  }
  seq.push_back(byte_level);
  j["pre_tokenizer"]["pretokenizers"] = seq;
  EXPECT_EQ(*ImportOk(j).GetString("tokenizer.ggml.pre"), "deepseek-v3");
}

// fixtures/gpt4o_tokenizer.json: GPT-4o's pre_tokenizer as its tokenizer.json
// conversions write it (Split on the o200k regex, Removed and inverted, then
// ByteLevel; Kanana-2 ships the same regex), over a tiny vocabulary.
TEST(HfImportTest, MapsGpt4oRegexToGpt4oPre) {
  const std::string text = ReadFixture("gpt4o_tokenizer.json");
  auto md = ImportHfTokenizer(text, "");
  ASSERT_TRUE(md.ok()) << md.status().ToString();
  EXPECT_EQ(*md->GetString("tokenizer.ggml.pre"), "gpt-4o");
  auto tok = Tokenizer::FromMetadata(*md);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // GPT-4o splits "HelloWorld" at the case change, so the first-ranked merge
  // "o W" never applies: "Hello" (11) "World" (15).
  EXPECT_THAT((*tok)->Encode("HelloWorld", false, true), ElementsAre(11, 15));

  // The same regex in an Isolated split (the other spelling) maps the same way.
  Json j = Json::parse(text);
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Isolated";
  j["pre_tokenizer"]["pretokenizers"][0]["invert"] = false;
  EXPECT_EQ(*ImportOk(j).GetString("tokenizer.ggml.pre"), "gpt-4o");
}

TEST(HfImportTest, MapsKimiK2RegexToKimiK2Pre) {
  Json j = SmallByteLevel();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
      R"([\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+)"
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+)"
      R"([\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
      R"(|\s*[\r\n]+|\s+(?!\S)|\s+)";
  j["model"]["ignore_merges"] = false;
  EXPECT_EQ(*ImportOk(j).GetString("tokenizer.ggml.pre"), "kimi-k2");
}

TEST(HfImportTest, RejectsRemovedInvertedSplitOverSeveralRegexes) {
  // deepseek-v3 splits in three passes: each leaves gaps that the next one
  // splits, so keeping only the matches would drop text.
  Json j = SmallByteLevel();
  Json split = j["pre_tokenizer"]["pretokenizers"][0];
  Json byte_level = j["pre_tokenizer"]["pretokenizers"][1];
  split["behavior"] = "Removed";
  split["invert"] = true;
  Json seq = Json::array();
  for (const char* re : {"\\p{N}{1,3}", "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
                         "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?"
                         "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}) {
    split["pattern"]["Regex"] = re;
    seq.push_back(split);
  }
  seq.push_back(byte_level);
  j["pre_tokenizer"]["pretokenizers"] = seq;
  j["model"]["ignore_merges"] = false;
  Status s = ImportError(j);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("deepseek-v3"));
}

TEST(HfImportTest, RejectsUnknownPreTokenizerRegex) {
  Json j = SmallByteLevel();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{L}+";
  Status s = ImportError(j);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("unsupported pre-tokenizer"));
  EXPECT_THAT(s.message(), HasSubstr("\\p{L}+"));
  EXPECT_THAT(s.message(), HasSubstr("gpt-4o, kimi-k2"));  // the known list comes from the table
}

TEST(HfImportTest, RejectsIgnoreMergesForPreThatMergesEveryWord) {
  Json j = SmallByteLevel();
  j["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = true;
  j["pre_tokenizer"]["pretokenizers"].erase(0);
  j["model"]["ignore_merges"] = true;
  EXPECT_THAT(ImportError(j).message(), HasSubstr("ignore_merges"));
}

TEST(HfImportTest, ReadsSpecialTokensAndFlagsFromConfig) {
  Json cfg = {{"bos_token", {{"__type", "AddedToken"}, {"content", "<|eot_id|>"}}},
              {"eos_token", "<|eot_id|>"}, {"pad_token", "<think>"}, {"unk_token", nullptr},
              {"add_bos_token", true}, {"add_eos_token", false}, {"chat_template", "{{ messages }}"}};
  GgufMetadata md = ImportOk(SmallByteLevel(), cfg);
  EXPECT_EQ(*md.GetInt("tokenizer.ggml.bos_token_id"), 7);
  EXPECT_EQ(*md.GetInt("tokenizer.ggml.eos_token_id"), 7);
  EXPECT_EQ(*md.GetInt("tokenizer.ggml.padding_token_id"), 8);
  EXPECT_FALSE(md.Has("tokenizer.ggml.unknown_token_id"));
  EXPECT_TRUE(*md.GetBool("tokenizer.ggml.add_bos_token"));
  EXPECT_FALSE(*md.GetBool("tokenizer.ggml.add_eos_token"));
  EXPECT_EQ(*md.GetString("tokenizer.chat_template"), "{{ messages }}");
}

TEST(HfImportTest, ReadsNamedChatTemplates) {
  Json cfg = {{"chat_template", {{{"name", "default"}, {"template", "A"}}, {{"name", "tool_use"}, {"template", "B"}}}}};
  GgufMetadata md = ImportOk(SmallByteLevel(), cfg);
  EXPECT_EQ(*md.GetString("tokenizer.chat_template"), "A");
  EXPECT_EQ(*md.GetString("tokenizer.chat_template.tool_use"), "B");
}

TEST(HfImportTest, RejectsConfigTokenMissingFromVocabulary) {
  Json cfg = {{"eos_token", "<|nope|>"}};
  Status s = ImportError(SmallByteLevel(), cfg);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("<|nope|>"));
}

TEST(HfImportTest, MapsSentencePieceBpeToLlamaWithMergeRankScores) {
  GgufMetadata md = ImportOk(SmallSpm());
  EXPECT_EQ(*md.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_FALSE(*md.GetBool("tokenizer.ggml.add_space_prefix"));
  // From the post-processor: <bos> leads the single template.
  EXPECT_EQ(*md.GetInt("tokenizer.ggml.bos_token_id"), 2);
  EXPECT_TRUE(*md.GetBool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(*md.GetInt("tokenizer.ggml.unknown_token_id"), 3);
  std::vector<float> scores = *md.GetFloatArray("tokenizer.ggml.scores");
  std::vector<int64_t> types = *md.GetIntArray("tokenizer.ggml.token_type");
  EXPECT_EQ(scores[7], 0.0f);    // ▁a: rank 0
  EXPECT_EQ(scores[8], -1.0f);   // ab: rank 1
  EXPECT_EQ(scores[9], -2.0f);   // ▁ab: first of its merges, rank 2
  EXPECT_LT(scores[5], -1e8f);   // single characters are never merged into
  EXPECT_EQ(types[2], 3);        // control
  EXPECT_EQ(types[3], 2);        // unknown
  EXPECT_EQ(types[5], 1);
  EXPECT_EQ(types[10 + 0x41], 6);  // <0x41>: byte
}

TEST(HfImportTest, ImportedSentencePieceTokenizerEncodes) {
  auto tok = Tokenizer::FromMetadata(ImportOk(SmallSpm()));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // "▁a" (rank 0) before "ab" (rank 1), then "▁ab"; "c" falls back to its byte.
  EXPECT_THAT((*tok)->Encode(" ab c", false, true), ElementsAre(9, 4, 10 + 'c'));
  EXPECT_THAT((*tok)->Encode("ab", false, true), ElementsAre(8));
}

TEST(HfImportTest, ReadsPrependNormalizerAsSpacePrefix) {
  Json j = SmallSpm();
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", {{{"type", "Prepend"}, {"prepend", "\u2581"}}, j["normalizer"]}}};
  j.erase("pre_tokenizer");
  EXPECT_TRUE(*ImportOk(j).GetBool("tokenizer.ggml.add_space_prefix"));
}

TEST(HfImportTest, RecordsNfcNormalizer) {
  Json j = SmallByteLevel();
  j["normalizer"] = {{"type", "NFC"}};
  EXPECT_EQ(*ImportOk(j).GetString("tokenizer.pagoda.normalizer"), "nfc");
  // Inside a Sequence, next to the SentencePiece space replacement.
  Json spm = SmallSpm();
  spm["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, spm["normalizer"]}}};
  EXPECT_EQ(*ImportOk(spm).GetString("tokenizer.pagoda.normalizer"), "nfc");
}

TEST(HfImportTest, RecordsAbsentNormalizerAsNone) {
  // Explicit, so that a qwen2 pre-tokenizer does not fall back to NFC.
  EXPECT_EQ(*ImportOk(SmallByteLevel()).GetString("tokenizer.pagoda.normalizer"), "none");
  EXPECT_EQ(*ImportOk(SmallSpm()).GetString("tokenizer.pagoda.normalizer"), "none");
}

TEST(HfImportTest, ImportedNfcTokenizerComposesDecomposedText) {
  Json j = SmallByteLevel();
  j["normalizer"] = {{"type", "NFC"}};
  // "é" is byte-level "Ã©"; one merge makes it a token.
  j["model"]["vocab"]["\u00c3"] = 11;
  j["model"]["vocab"]["\u00a9"] = 12;
  j["model"]["vocab"]["\u00c3\u00a9"] = 13;
  j["model"]["merges"].push_back("\u00c3 \u00a9");
  auto tok = Tokenizer::FromMetadata(ImportOk(j));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_THAT((*tok)->Encode("e\u0301", false, false), ElementsAre(13));
  EXPECT_THAT((*tok)->Encode("\u00e9", false, false), ElementsAre(13));
}

TEST(HfImportTest, RejectsUnsupportedModelsAndNormalizers) {
  Json unigram = SmallSpm();
  unigram["model"]["type"] = "Unigram";
  EXPECT_THAT(ImportError(unigram).message(), HasSubstr("'Unigram'"));

  Json lower = SmallByteLevel();
  lower["normalizer"] = {{"type", "Lowercase"}};
  EXPECT_THAT(ImportError(lower).message(), HasSubstr("normalizer 'Lowercase'"));

  Json plain = SmallByteLevel();
  plain.erase("pre_tokenizer");
  EXPECT_THAT(ImportError(plain).message(), HasSubstr("unsupported BPE flavour"));
}

TEST(HfImportTest, RejectsMalformedInput) {
  EXPECT_THAT(ImportHfTokenizer("{not json", "").status().message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(ImportHfTokenizer("[]", "").status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ImportHfTokenizer("{}", "").status().message(), HasSubstr("no 'model'"));
  EXPECT_THAT(ImportHfTokenizer(SmallByteLevel().dump(), "{oops").status().message(),
              HasSubstr("tokenizer_config.json is not valid JSON"));

  Json no_vocab = SmallByteLevel();
  no_vocab["model"].erase("vocab");
  EXPECT_THAT(ImportError(no_vocab).message(), HasSubstr("model.vocab"));
  Json no_merges = SmallByteLevel();
  no_merges["model"].erase("merges");
  EXPECT_THAT(ImportError(no_merges).message(), HasSubstr("model.merges"));
  Json bad_merge = SmallByteLevel();
  bad_merge["model"]["merges"] = {"h e x"};
  EXPECT_THAT(ImportError(bad_merge).message(), HasSubstr("malformed merge"));
  Json dup = SmallByteLevel();
  dup["model"]["vocab"]["x"] = 0;
  EXPECT_THAT(ImportError(dup).message(), HasSubstr("used twice"));
  Json bad_added = SmallByteLevel();
  bad_added["added_tokens"][0].erase("id");
  EXPECT_THAT(ImportError(bad_added).message(), HasSubstr("added token"));
}

TEST(HfImportTest, SurvivesGgufRoundTrip) {
  const GgufMetadata md = ImportOk(SmallSpm());
  GgufWriter w;
  for (const auto& [k, v] : md.entries()) w.metadata().Set(k, v);
  std::vector<uint8_t> bytes = w.Serialize();
  auto parsed = ParseGguf(bytes.data(), bytes.size());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  auto tok = Tokenizer::FromMetadata(parsed->metadata);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_THAT((*tok)->Encode(" ab", false, true), ElementsAre(9));
}

}  // namespace
}  // namespace pagoda
