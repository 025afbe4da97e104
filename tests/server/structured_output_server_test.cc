// Structured outputs and tool calls through the in-process server on
// stories260K (ChatML: the generic tool dialect), checked through the
// src/http client: the constrained output parses, tool calls come back in
// OpenAI's shapes (streamed deltas concatenate to the body), and constraints
// that cannot be enforced are 400s naming their field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "http/client.h"
#include "server/openai_server.h"
#include "support/test_paths.h"
#include "tokenizer/chat_template.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
constexpr const char* kModel = "stories260K.gguf";

class StructuredOutputServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_REQUIRE_TESTDATA(kModel);
    auto file = GgufFile::Open(testing::TestDataPath(kModel));
    ASSERT_TRUE(file.ok());
    file_ = std::shared_ptr<const GgufFile>(std::move(file).value());
    auto tok = Tokenizer::FromMetadata(file_->metadata());
    ASSERT_TRUE(tok.ok());
    tok_ = std::move(tok).value();
    pool_ = std::make_unique<ThreadPool>(1);
    auto model = LoadModel(file_, *pool_);
    ASSERT_TRUE(model.ok());
    model_ = std::move(model).value();
    EngineOptions eo;
    eo.n_ctx = 512;
    ServeOptions so;
    so.port = 0;
    so.model_id = "stories260K";
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

  std::pair<int, std::string> PostRaw(const json& body) {
    auto r = client_->Send("POST", "/v1/chat/completions", body.dump(), {});
    EXPECT_TRUE(r.ok());
    return r.ok() ? std::make_pair(r->status, r->body) : std::make_pair(0, std::string());
  }
  json Post(const json& body, int expect_status = 200) {
    auto [status, text] = PostRaw(body);
    EXPECT_EQ(status, expect_status) << text;
    return json::parse(text, nullptr, false);
  }

  static json Tools() {
    return json::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
        "properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["c","f"]}},
        "required":["city","unit"],"additionalProperties":false}}}])");
  }

  std::shared_ptr<const GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<OpenAiServer> server_;
  std::unique_ptr<http::Client> client_;
};

json Messages() { return json::parse(R"([{"role":"user","content":"Weather in Paris?"}])"); }

TEST_F(StructuredOutputServerTest, JsonSchemaOutputParses) {
  const json schema = json::parse(R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9},
      "ok":{"type":"boolean"}},"required":["n","ok"],"additionalProperties":false})");
  const json r = Post({{"messages", Messages()}, {"max_tokens", 40}, {"temperature", 1.0}, {"seed", 5}, {"n", 3},
                       {"response_format", {{"type", "json_schema"},
                                            {"json_schema", {{"name", "x"}, {"schema", schema}}}}}});
  ASSERT_EQ(r["choices"].size(), 3u);
  for (const json& c : r["choices"]) {
    const json v = json::parse(c["message"]["content"].get<std::string>());  // throws if not JSON
    EXPECT_TRUE(v["n"].is_number_integer());
    EXPECT_GE(v["n"].get<int>(), 1);
    EXPECT_LE(v["n"].get<int>(), 9);
    EXPECT_TRUE(v["ok"].is_boolean());
    EXPECT_EQ(v.size(), 2u);
    EXPECT_EQ(c["finish_reason"], "stop");
  }
}

TEST_F(StructuredOutputServerTest, RequiredToolCallInOpenAiShape) {
  const json r = Post({{"messages", Messages()}, {"max_tokens", 80}, {"seed", 3}, {"tools", Tools()},
                       {"tool_choice", "required"}, {"parallel_tool_calls", false}});
  const json& c = r["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_TRUE(c["message"]["content"].is_null());
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  const json& call = c["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["function"]["name"], "get_weather");
  const json args = json::parse(call["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args["city"].is_string());
  EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f");
}

TEST_F(StructuredOutputServerTest, StreamedToolCallDeltasConcatenateToTheBody) {
  json req = {{"messages", Messages()}, {"max_tokens", 80}, {"seed", 8}, {"tools", Tools()},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}};
  const json full = Post(req);
  req["stream"] = true;
  auto [status, text] = PostRaw(req);
  ASSERT_EQ(status, 200);
  std::string name, arguments, id, finish;
  for (size_t p = text.find("data: "); p != std::string::npos; p = text.find("data: ", p + 1)) {
    const size_t end = text.find("\n\n", p);
    const std::string data = text.substr(p + 6, end - p - 6);
    if (data == "[DONE]") break;
    const json chunk = json::parse(data);
    for (const json& c : chunk["choices"]) {
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
      if (!c["delta"].contains("tool_calls")) continue;
      for (const json& t : c["delta"]["tool_calls"]) {
        EXPECT_EQ(t["index"], 0);
        if (t.contains("id")) {
          id = t["id"];
          name = t["function"]["name"];
        }
        arguments += t["function"]["arguments"].get<std::string>();
      }
    }
  }
  const json& call = full["choices"][0]["message"]["tool_calls"][0];
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(name, call["function"]["name"]);
  EXPECT_EQ(arguments, call["function"]["arguments"]);
  EXPECT_FALSE(id.empty());
}

TEST_F(StructuredOutputServerTest, UnenforceableConstraintsAre400s) {
  struct Case {
    json extra;
    std::string param;
    std::string needle;
  } cases[] = {
      {{{"response_format", {{"type", "json_schema"},
                             {"json_schema", {{"name", "x"}, {"schema", {{"type", "integer"}, {"multipleOf", 3}}}}}}}},
       "response_format", "multipleOf"},
      {{{"grammar", "root ::= missing"}}, "grammar", "missing"},
      {{{"grammar", "root ::= [^\\x00-\\U0010FFFF]"}}, "grammar", "admits no string"},
      {{{"regex", "a(?=b)"}}, "regex", "regex"},
      {{{"tools", json::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"object",
            "properties":{"x":{"type":"number","multipleOf":2}}}}}])")},
        {"tool_choice", "required"}},
       "tools", "multipleOf"},
  };
  for (const Case& c : cases) {
    json body = {{"messages", Messages()}, {"max_tokens", 5}};
    body.update(c.extra);
    const json e = Post(body, 400);
    EXPECT_EQ(e["error"]["param"], c.param) << body.dump();
    EXPECT_NE(e["error"]["message"].get<std::string>().find(c.needle), std::string::npos) << e.dump();
  }
}

}  // namespace
}  // namespace pagoda::server
