// The server in-process on an ephemeral port with stories260K, checked
// through the src/http client.
#include "server/openai_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "http/client.h"
#include "support/metrics_text.h"
#include "support/test_paths.h"
#include "tokenizer/chat_template.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
constexpr const char* kModel = "stories260K.gguf";

class OpenAiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_REQUIRE_TESTDATA(kModel);
    auto file = GgufFile::Open(testing::TestDataPath(kModel));
    ASSERT_TRUE(file.ok()) << file.status().message();
    file_ = std::shared_ptr<const GgufFile>(std::move(file).value());
    auto tok = Tokenizer::FromMetadata(file_->metadata());
    ASSERT_TRUE(tok.ok());
    tok_ = std::move(tok).value();
    pool_ = std::make_unique<ThreadPool>(1);
    auto model = LoadModel(file_, *pool_);
    ASSERT_TRUE(model.ok()) << model.status().message();
    model_ = std::move(model).value();
    EngineOptions eo = EngineConfig();
    ServeOptions so;
    so.port = 0;
    so.model_id = "stories260K";
    so.api_key = ApiKey();
    auto srv = OpenAiServer::Create(*model_, *tok_, ChatTemplateSource(file_->metadata()), eo, so);
    ASSERT_TRUE(srv.ok()) << srv.status().message();
    server_ = std::move(srv).value();
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<http::Client>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown(std::chrono::milliseconds(2000));
  }
  virtual std::string ApiKey() const { return ""; }
  virtual EngineOptions EngineConfig() const {
    EngineOptions eo;
    eo.n_ctx = 256;
    return eo;
  }

  json Post(const std::string& path, const json& body, int expect_status = 200) {
    auto r = client_->Send("POST", path, body.dump(), Headers());
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return {};
    EXPECT_EQ(r->status, expect_status) << r->body;
    return json::parse(r->body, nullptr, false);
  }
  virtual http::Headers Headers() const { return {}; }

  std::shared_ptr<const GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<OpenAiServer> server_;
  std::unique_ptr<http::Client> client_;
};

TEST_F(OpenAiServerTest, HealthModelsAndMetricsAnswer) {
  auto h = client_->Send("GET", "/health");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->status, 200);
  auto m = client_->Send("GET", "/v1/models");
  ASSERT_TRUE(m.ok());
  json j = json::parse(m->body);
  EXPECT_EQ(j["data"][0]["id"], "stories260K");
  auto metrics = client_->Send("GET", "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("pagoda:kv_cache_usage_perc"), std::string::npos);
  EXPECT_NE(metrics->body.find("pagoda:e2e_request_latency_seconds_bucket"), std::string::npos);
}

TEST_F(OpenAiServerTest, ChatCompletionIsSeededAndCountsUsage) {
  json body = {{"model", "stories260K"},
               {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
               {"max_tokens", 12},
               {"seed", 7}};
  json a = Post("/v1/chat/completions", body);
  json b = Post("/v1/chat/completions", body);
  EXPECT_EQ(a["object"], "chat.completion");
  EXPECT_EQ(a["choices"][0]["message"]["content"], b["choices"][0]["message"]["content"]);
  EXPECT_EQ(a["usage"]["completion_tokens"], 12);
  EXPECT_EQ(a["choices"][0]["finish_reason"], "length");
  // The repeated prompt is served from the prefix cache.
  EXPECT_GT(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 0);
}

TEST_F(OpenAiServerTest, StreamedChatMatchesNonStreamed) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Lily"}}}}, {"max_tokens", 10}, {"temperature", 0}};
  json full = Post("/v1/chat/completions", body);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  std::string text;
  bool done = false, usage = false;
  auto r = client_->SendSse("POST", "/v1/chat/completions", body.dump(), [&](std::string_view data) {
    if (data == "[DONE]") {
      done = true;
      return true;
    }
    json c = json::parse(data);
    if (c["choices"].empty()) usage = c["usage"]["completion_tokens"] == 10;
    else if (c["choices"][0]["delta"].contains("content")) text += c["choices"][0]["delta"]["content"].get<std::string>();
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(done);
  EXPECT_TRUE(usage);
  EXPECT_EQ(text, full["choices"][0]["message"]["content"].get<std::string>());
}

TEST_F(OpenAiServerTest, StopStringCutsTheText) {
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}};
  json full = Post("/v1/completions", body);
  std::string text = full["choices"][0]["text"];
  ASSERT_GT(text.size(), 6u);
  std::string stop = text.substr(3, 3);
  body["stop"] = stop;
  json cut = Post("/v1/completions", body);
  EXPECT_EQ(cut["choices"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");
}

TEST_F(OpenAiServerTest, CompletionsTakeTokenPromptsAndN) {
  json body = {{"prompt", {{1, 403, 407}, {1, 300}}}, {"max_tokens", 4}, {"n", 2}, {"seed", 3}, {"logprobs", 2}};
  json r = Post("/v1/completions", body);
  ASSERT_EQ(r["choices"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    EXPECT_EQ(r["choices"][i]["logprobs"]["tokens"].size(), 4u);
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(r["usage"]["completion_tokens"], 16);
}

TEST_F(OpenAiServerTest, BadRequestsGetOpenAiErrors) {
  json e = Post("/v1/chat/completions", {{"messages", json::array()}}, 400);
  EXPECT_TRUE(e["error"].contains("message"));
  e = Post("/v1/chat/completions", {{"model", "gpt-9"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}}, 404);
  EXPECT_EQ(e["error"]["code"], "model_not_found");
  e = Post("/v1/completions", {{"prompt", {999999}}}, 400);
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  e = Post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 100000}}, 400);
  EXPECT_EQ(e["error"]["code"], "context_length_exceeded");
}

TEST_F(OpenAiServerTest, TokenizeRoundTrips) {
  json t = Post("/tokenize", {{"prompt", "Once upon a time"}});
  ASSERT_TRUE(t["tokens"].is_array());
  json d = Post("/detokenize", {{"tokens", t["tokens"]}});
  EXPECT_EQ(d["prompt"], "Once upon a time");
}

TEST_F(OpenAiServerTest, DisconnectMidStreamCancelsAndFreesKv) {
  // ignore_eos: a sampled end of text must not finish the request before the disconnect.
  json body = {{"prompt", "Once"}, {"max_tokens", 200}, {"stream", true}, {"temperature", 1}, {"ignore_eos", true}};
  http::Client probe("127.0.0.1", server_->port());
  // stories260K generates 200 tokens in tens of ms: on a loaded machine the
  // engine can finish before the disconnect reaches it. Such an attempt
  // proves nothing and is repeated; one that is cancelled must free its KV.
  bool cancelled = false;
  for (int attempt = 0; attempt < 5 && !cancelled; ++attempt) {
    int events = 0;
    auto r = client_->SendSse("POST", "/v1/completions", body.dump(), [&](std::string_view) { return ++events < 3; });
    ASSERT_TRUE(r.ok());
    bool settled = false;
    for (int i = 0; i < 200 && !settled; ++i) {
      auto m = probe.Send("GET", "/metrics");
      ASSERT_TRUE(m.ok());
      const double n_cancelled = testing::MetricValue(m->body, "request_cancelled_total").value_or(-1);
      const double n_finished = testing::MetricValue(m->body, "request_success_total").value_or(-1);
      cancelled = n_cancelled >= 1;
      settled = n_cancelled + n_finished == attempt + 1 &&
                testing::MetricValue(m->body, "kv_cache_usage_perc") == 0.0;
      if (!settled) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(settled) << "attempt " << attempt << ": the request neither finished nor freed its KV";
  }
  EXPECT_TRUE(cancelled) << "every attempt finished before the disconnect reached the engine";
}

class OpenAiServerAuthTest : public OpenAiServerTest {
 protected:
  std::string ApiKey() const override { return "sekrit"; }
};

TEST_F(OpenAiServerAuthTest, RequiresTheBearerTokenUnderV1) {
  auto r = client_->Send("GET", "/v1/models");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  http::Headers h;
  h.Add("Authorization", "Bearer sekrit");
  r = client_->Send("GET", "/v1/models", {}, h);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(client_->Send("GET", "/health")->status, 200);
}

class OpenAiServerSmallQueueTest : public OpenAiServerTest {
 protected:
  EngineOptions EngineConfig() const override {
    EngineOptions eo = OpenAiServerTest::EngineConfig();
    eo.max_waiting = 2;
    return eo;
  }
};

TEST_F(OpenAiServerSmallQueueTest, RequestNeedingMoreSequencesThanTheQueueIs400NotA429) {
  // 3 prompts x n=1 could never be queued at once: retrying a 429 would never help.
  json e = Post("/v1/completions", {{"prompt", {"a", "b", "c"}}, {"max_tokens", 1}}, 400);
  EXPECT_EQ(e["error"]["code"], "invalid_value");
  EXPECT_EQ(e["error"]["param"], "n");
  e = Post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"n", 3}}, 400);
  EXPECT_EQ(e["error"]["param"], "n");
  // What fits the queue is served.
  json r = Post("/v1/completions", {{"prompt", {"a", "b"}}, {"max_tokens", 1}});
  EXPECT_EQ(r["choices"].size(), 2u);
}

}  // namespace
}  // namespace pagoda::server
