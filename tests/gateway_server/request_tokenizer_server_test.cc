// The gateway predicts what the engine does: for a corpus of chat requests
// (system prompts, multi-turn, tools, tool turns, content parts) and
// completion prompts, over several tokenizers and chat templates, the
// gateway's RequestTokenizer (GGUF metadata only) yields the very ids a real
// OpenAiServer reports on /tokenize and counts in usage.prompt_tokens, and
// the CacheAwarePolicy's predicted_cached_tokens, from an index fed with the
// blocks the engine stored (as its KV events would report them), equals the
// usage.prompt_tokens_details.cached_tokens the engine reports for each
// request in turn.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gateway/block_hasher.h"
#include "gateway/cache_aware_policy.h"
#include "gateway/kv_index.h"
#include "gateway/request_tokenizer.h"
#include "gguf/gguf_file.h"
#include "http/client.h"
#include "model/random_model.h"
#include "server/openai_server.h"
#include "support/loaded_model.h"
#include "support/test_paths.h"
#include "tokenizer/chat_template.h"

namespace pagoda::gateway {
namespace {

using nlohmann::json;

struct ServeCase {
  const char* name;
  const char* vocab;     // a testdata GGUF: its weights when it has them, else its vocabulary
  const char* fixture;   // chat template (tests/tokenizer/fixtures); "" = the GGUF's own or ChatML
};

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The model file `pagoda serve` would be given: stories260K as is, or a tiny
// random-weight model carrying the vocabulary and template under test.
std::string ModelFile(const ServeCase& s) {
  if (std::string(s.vocab) == "stories260K.gguf") return testing::TestDataPath(s.vocab);
  auto vocab = GgufFile::Open(testing::TestDataPath(s.vocab));
  EXPECT_TRUE(vocab.ok()) << vocab.status().ToString();
  if (!vocab.ok()) return "";
  RandomModelSpec spec;
  spec.n_embd = 32;
  spec.n_layer = 1;
  spec.n_head = 2;
  spec.n_head_kv = 2;
  spec.n_ff = 64;
  spec.n_ctx = 2048;
  spec.seed = 3;
  spec.n_threads = 1;
  spec.tokenizer = (*vocab)->metadata();
  if (*s.fixture) {
    const auto path = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/tokenizer/fixtures" / s.fixture;
    spec.tokenizer.Set("tokenizer.chat_template", GgufValue(ReadFile(path)));
  }
  const std::string out = (testing::TempDirForProcess() / (std::string(s.name) + ".gguf")).string();
  Status st = WriteRandomModel(spec, out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return st.ok() ? out : "";
}

const char* kTools = R"([{"type": "function", "function": {"name": "get_weather", "description": "Current weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])";

// Requests in the order they are sent; later turns extend earlier ones.
std::vector<std::pair<std::string, json>> Corpus() {
  std::string system = "You are the Pagoda assistant. Answer briefly, cite the docs, never invent flags. ";
  system += system;
  const json sys = {{"role", "system"}, {"content", system}};
  const json u1 = {{"role", "user"}, {"content", "How do I start a server?"}};
  const json a1 = {{"role", "assistant"}, {"content", "Run pagoda serve --model FILE."}};
  const json u2 = {{"role", "user"}, {"content", "And with an API key? \xF0\x9F\x94\x91"}};
  const json a2 = {{"role", "assistant"}, {"content", "Add --api-key KEY."}};
  const json u3 = {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Thanks."}}, {{"type", "text"}, {"text", "Bye"}}}}};
  const json tools = json::parse(kTools);
  const json call = json::parse(R"({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
      "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]})");
  const json result = {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "21C and sunny"}};
  const json weather = {{"role", "user"}, {"content", "Weather in Paris?"}};
  std::vector<std::pair<std::string, json>> c;
  const std::string chat = "/v1/chat/completions", comp = "/v1/completions";
  c.push_back({chat, {{"messages", {u1}}}});
  c.push_back({chat, {{"messages", {sys, u1}}}});
  c.push_back({chat, {{"messages", {sys, u1, a1, u2}}}});
  c.push_back({chat, {{"messages", {sys, u1, a1, u2, a2, u3}}}});
  c.push_back({chat, {{"messages", {sys, weather}}, {"tools", tools}}});
  c.push_back({chat, {{"messages", {sys, weather}}, {"tools", tools}, {"tool_choice", "none"}}});
  c.push_back({chat, {{"messages", {sys, weather, call, result}}, {"tools", tools}}});
  c.push_back({chat, {{"messages", {sys, u1, a1, u2}}}});  // a repeat: the whole prefix is cached
  c.push_back({comp, {{"prompt", system + "Once upon a time"}}});
  c.push_back({comp, {{"prompt", system + "Once upon a time there was a gateway"}}});
  c.push_back({comp, {{"prompt", ""}}});
  c.push_back({comp, {{"prompt", {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}}}});
  return c;
}

class RequestTokenizerServerTest : public ::testing::TestWithParam<ServeCase> {};

TEST_P(RequestTokenizerServerTest, GatewayTokensAndCachedBlocksMatchTheServer) {
  const ServeCase& s = GetParam();
  PAGODA_REQUIRE_TESTDATA(s.vocab);
  const std::string path = ModelFile(s);
  ASSERT_FALSE(path.empty());
  // The server, as `pagoda serve --model path` builds it.
  testing::LoadedModel m = testing::LoadModelAndTokenizer(path, 1);
  ASSERT_TRUE(m.model && m.tokenizer);
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok());
  EngineOptions eo;
  eo.n_ctx = 2048;
  server::ServeOptions so;
  so.port = 0;
  so.model_id = "m";
  auto srv = server::OpenAiServer::Create(*m.model, *m.tokenizer, ChatTemplateSource((*file)->metadata()), eo, so);
  ASSERT_TRUE(srv.ok()) << srv.status().ToString();
  ASSERT_TRUE((*srv)->Start().ok());
  http::Client client("127.0.0.1", (*srv)->port());
  // The gateway's side: its own tokenizer from the file, an index, the policy.
  auto gw = RequestTokenizer::FromGguf(path);
  ASSERT_TRUE(gw.ok()) << gw.status().ToString();
  KvIndex index;
  CacheAwarePolicy policy(&index);
  ReplicaView replica;
  replica.id = "r";
  replica.kv_events = true;
  int n_ok = 0;
  int64_t cached_total = 0;
  for (const auto& [route, body] : Corpus()) {
    SCOPED_TRACE(route + " " + body.dump().substr(0, 160));
    auto ids = (*gw)->Tokens(route, body.dump());
    json req = body;
    req["max_tokens"] = 1;
    req["temperature"] = 0;
    auto r = client.Send("POST", route, req.dump());
    ASSERT_TRUE(r.ok());
    if (!ids.ok()) {  // the template refuses this conversation: so must the server
      EXPECT_EQ(r->status, 400) << ids.status().ToString() << " / " << r->body;
      continue;
    }
    ASSERT_EQ(r->status, 200) << r->body;
    ++n_ok;
    const json usage = json::parse(r->body)["usage"];
    EXPECT_EQ(usage["prompt_tokens"].get<size_t>(), ids->size());
    // The exact ids through the server's /tokenize.
    json tk = {{"model", "m"}};
    if (body.contains("messages")) {
      tk["messages"] = body["messages"];
      if (body.contains("tools") && body.value("tool_choice", "") != "none") tk["tools"] = body["tools"];
    } else {
      tk["prompt"] = body["prompt"];
    }
    if (!(body.contains("prompt") && !body["prompt"].is_string())) {
      auto t = client.Send("POST", "/tokenize", tk.dump());
      ASSERT_TRUE(t.ok());
      ASSERT_EQ(t->status, 200) << t->body;
      const json tj = json::parse(t->body);
      // (An empty completion prompt is BOS alone for generation; /tokenize gives no ids for it.)
      if (!(body.contains("prompt") && body["prompt"] == "")) {
        EXPECT_EQ(tj["tokens"].get<std::vector<int32_t>>(), *ids);
      }
    } else {
      EXPECT_EQ(body["prompt"].get<std::vector<int32_t>>(), *ids);
    }
    // Predicted cached tokens == what the engine reused.
    RouteInput in;
    in.model = "m";
    in.tokens = *ids;
    in.block_size = eo.block_size;
    const RouteChoice choice = policy.Pick(in, std::span<const ReplicaView>(&replica, 1));
    const int64_t cached = usage["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
    EXPECT_EQ(choice.predicted_cached_tokens, cached);
    cached_total += cached;
    // The engine stored the prompt's full blocks: what its BlockStored would say.
    const auto chain = ChainedBlockHashes(*ids, eo.block_size);
    std::vector<std::string> names;
    for (uint64_t h : chain) names.push_back(std::to_string(h));
    index.OnStored("r", std::nullopt, names, std::span(*ids).first(chain.size() * eo.block_size), eo.block_size);
  }
  EXPECT_GE(n_ok, 8);
  EXPECT_GT(cached_total, 0);  // the corpus shares prefixes: the prediction is not 0 == 0
  std::printf("[ %s ] %d requests served, %lld cached tokens predicted and reported\n", s.name, n_ok,
              static_cast<long long>(cached_total));
  (*srv)->Shutdown(std::chrono::milliseconds(2000));
}

INSTANTIATE_TEST_SUITE_P(
    Templates, RequestTokenizerServerTest,
    ::testing::Values(ServeCase{"stories_chatml", "stories260K.gguf", ""},
                      ServeCase{"gpt2_llama31_tools", "ggml-vocab-gpt-2.gguf", "llama31_tools.jinja"},
                      ServeCase{"llama_spm_llama2", "ggml-vocab-llama-spm.gguf", "llama2_chat.jinja"},
                      ServeCase{"phi3_mistral", "ggml-vocab-phi-3.gguf", "mistral_instruct.jinja"},
                      ServeCase{"deepseek_chatml", "ggml-vocab-deepseek-llm.gguf", ""}),
    [](const ::testing::TestParamInfo<ServeCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace pagoda::gateway
