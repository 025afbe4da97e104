// Corpus test of the JSON Schema -> grammar converter against an independent
// validator. For every tests/sampling/grammar/schemas/*.json ({"description",
// "schema", "valid": [...], "invalid": [...]}):
//   - the schema converts and its grammar compiles;
//   - each "valid" instance, written compactly and with the spaced layout, is
//     accepted; each "invalid" one is rejected;
//   - random walks through the grammar (a random allowed byte at each step,
//     then the bytes that bring acceptance nearest, so walks end) give
//     outputs, several seeds per schema.
// Then validate_corpus.mjs checks with ajv that every output parses and
// validates, that "valid" instances validate and "invalid" ones do not.
// Needs node and `npm ci` in tests/sampling/grammar; skips otherwise. Its own
// executable (tests/sampling/tests.cmake); named *_corpus.cc to stay out of
// the unit-test glob.
#include <gtest/gtest.h>

#include <algorithm>
#include <bitset>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "sampling/grammar/grammar.h"
#include "support/run_shell.h"
#include "sampling/grammar/json_schema.h"
#include "sampling/grammar/matcher.h"
#include "sampling/grammar/regex_charset.h"

namespace pagoda::grammar {
namespace {

using OJson = nlohmann::ordered_json;

const std::filesystem::path kDir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/sampling/grammar";
// PAGODA_CORPUS_SEEDS overrides this for a deeper run.
constexpr int kSeedsPerSchema = 12;
constexpr size_t kMaxWalkBytes = 20000;

using ::pagoda::testing::ReadAll;
using ::pagoda::testing::RunShell;

// The documented layout with its optional spaces: ", " and ": ".
std::string Spaced(const OJson& v) {
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, x] : v.items()) {
      if (!first) out += ", ";
      first = false;
      out += OJson(k).dump() + ": " + Spaced(x);
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Spaced(v[i]);
    return out + "]";
  }
  return v.dump();
}

// A random string of the grammar's language, or "" with *error set.
std::string RandomWalk(const std::shared_ptr<const Grammar>& g, uint64_t seed, std::string* error) {
  std::mt19937_64 rng(seed);
  GrammarMatcher m(g);
  const size_t target = rng() % 300;
  std::string out;
  std::bitset<256> allowed;
  while (true) {
    if (m.IsAccepting() && (!m.CanContinue() || out.size() >= target || rng() % 8 == 0)) return out;
    if (out.size() > kMaxWalkBytes) {
      *error = "walk did not finish";
      return "";
    }
    m.AllowedNextBytes(allowed);
    std::vector<int> choices;
    for (int b = 0; b < 256; ++b) {
      if (allowed.test(b)) choices.push_back(b);
    }
    if (choices.empty()) {
      *error = "no byte allowed in a non-accepting state after \"" + out + "\"";
      return "";
    }
    int pick;
    if (out.size() < target) {
      // Mostly ASCII where ASCII is allowed, to keep outputs readable; the
      // rest of the time any allowed byte (multi-byte UTF-8 too).
      std::vector<int> ascii;
      for (int b : choices) {
        if (b < 0x80) ascii.push_back(b);
      }
      const auto& pool = !ascii.empty() && rng() % 5 != 0 ? ascii : choices;
      pick = pool[rng() % pool.size()];
    } else {
      // Finish: among the bytes that leave the fewest bytes to acceptance.
      int32_t best = Grammar::kInfinite;
      std::vector<int> best_bytes;
      for (int b : choices) {
        GrammarMatcher next = m;
        const char c = static_cast<char>(b);
        if (!next.AcceptBytes(std::string_view(&c, 1))) continue;
        const int32_t left = next.MinBytesToAccept();
        if (left < best) {
          best = left;
          best_bytes.clear();
        }
        if (left == best) best_bytes.push_back(b);
      }
      if (best_bytes.empty()) {
        *error = "allowed bytes were refused after \"" + out + "\"";
        return "";
      }
      pick = best_bytes[rng() % best_bytes.size()];
    }
    const char c = static_cast<char>(pick);
    if (!m.AcceptBytes(std::string_view(&c, 1))) {
      *error = "an allowed byte was refused after \"" + out + "\"";
      return "";
    }
    out += c;
  }
}

TEST(JsonSchemaCorpusTest, GeneratedOutputsValidateWithAjv) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(kDir / "schemas")) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 40u);

  const char* seeds_env = std::getenv("PAGODA_CORPUS_SEEDS");
  const int seeds = seeds_env != nullptr && std::atoi(seeds_env) > 0 ? std::atoi(seeds_env) : kSeedsPerSchema;
  OJson report = OJson::array();
  size_t n_outputs = 0;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const auto& file = files[fi];
    SCOPED_TRACE(file.filename().string());
    const OJson doc = OJson::parse(ReadAll(file));
    auto gbnf = JsonSchemaToGbnf(doc["schema"]);
    ASSERT_TRUE(gbnf.ok()) << gbnf.status().ToString();
    auto g = CompileGbnf(*gbnf);
    ASSERT_TRUE(g.ok()) << *gbnf << "\n" << g.status().ToString();
    for (const auto& v : doc["valid"]) {
      EXPECT_TRUE(Accepts(**g, v.dump())) << "valid instance rejected: " << v.dump() << "\n" << *gbnf;
      EXPECT_TRUE(Accepts(**g, Spaced(v))) << "valid instance rejected: " << Spaced(v);
    }
    for (const auto& v : doc["invalid"]) {
      EXPECT_FALSE(Accepts(**g, v.dump())) << "invalid instance accepted: " << v.dump();
    }
    OJson outputs = OJson::array();
    for (int seed = 1; seed <= seeds; ++seed) {
      std::string error;
      const std::string text = RandomWalk(*g, fi * 1000 + seed, &error);
      ASSERT_TRUE(error.empty()) << "seed " << seed << ": " << error;
      std::u32string cps;
      ASSERT_TRUE(DecodeUtf8(text, &cps)) << "seed " << seed << ": output is not UTF-8";
      EXPECT_TRUE(Accepts(**g, text)) << text;
      outputs.push_back(text);
      ++n_outputs;
    }
    report.push_back({{"file", file.string()}, {"outputs", outputs}});
  }

  if (!std::filesystem::exists(kDir / "node_modules/ajv") || !std::filesystem::exists(kDir / "node_modules/ajv-formats")) {
    GTEST_SKIP() << "run npm ci in tests/sampling/grammar for the ajv check (" << n_outputs << " outputs generated)";
  }
  std::string out;
  if (RunShell("node --version", &out) != 0) GTEST_SKIP() << "node is not on PATH";
  const auto path = std::filesystem::path(PAGODA_BINARY_DIR) / "tests" / "json_schema_corpus_outputs.json";
  std::filesystem::create_directories(path.parent_path());
  {
    std::ofstream f(path, std::ios::binary);
    f << report.dump(1);
  }
  out.clear();
  const int rc = RunShell("node " + (kDir / "validate_corpus.mjs").string() + " " + path.string(), &out);
  EXPECT_EQ(rc, 0) << out;
  std::printf("%s", out.c_str());
}

}  // namespace
}  // namespace pagoda::grammar
