// GLM-4.5 tool calls through the in-process server on stories260K with the
// published GLM-4.5 chat template (reasoning markers renamed, see SetUp): the model writes each argument as
// <arg_key>/<arg_value> text, and the route hands the offered tools to the
// output parser so that a value whose parameter is declared a string stays
// a string even when it reads as JSON ("75001" is not the number 75001).
// A `grammar` fixes the generated call, so the model's weights do not matter.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "http/client.h"
#include "server/openai_server.h"
#include "support/test_paths.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
constexpr const char* kModel = "stories260K.gguf";

std::string ReadSource(const std::string& rel) {
  std::ifstream in(std::filesystem::path(PAGODA_SOURCE_DIR) / rel, std::ios::binary);
  EXPECT_TRUE(in.good()) << rel;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class GlmToolCallServerTest : public ::testing::Test {
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
    eo.n_ctx = 1024;  // the template's tool preamble alone is ~500 tokens here
    ServeOptions so;
    so.port = 0;
    so.model_id = "stories260K";
    // The published template with its <think> markers renamed: with them the
    // server leaves an optional free reasoning block before the grammar's
    // call, which this random model may enter and not leave. The tool-call
    // syntax (what the dialect is detected from) is untouched.
    std::string tmpl = ReadSource("tests/data/chat_templates/glm45.jinja");
    for (size_t p = tmpl.find("think>"); p != std::string::npos; p = tmpl.find("think>", p)) {
      tmpl.replace(p, 6, "muse>");
    }
    auto srv = OpenAiServer::Create(*model_, *tok_, tmpl, eo, so);
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

  // A call of get_weather with zip 75001 and days 3, as GLM-4.5 writes it.
  static json Request() {
    return {
        {"messages", json::parse(R"([{"role":"user","content":"Weather in Paris?"}])")},
        {"tools", json::parse(R"([{"type":"function","function":{"name":"get_weather","parameters":{
            "type":"object","properties":{"zip":{"type":"string"},"days":{"type":"integer"}},
            "required":["zip"]}}}])")},
        {"grammar", "root ::= \"<tool_call>get_weather\\n<arg_key>zip</arg_key>\\n<arg_value>75001</arg_value>\\n"
                    "<arg_key>days</arg_key>\\n<arg_value>3</arg_value>\\n</tool_call>\""},
        {"temperature", 0},
        {"max_tokens", 400},
    };
  }

  std::shared_ptr<const GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<OpenAiServer> server_;
  std::unique_ptr<http::Client> client_;
};

TEST_F(GlmToolCallServerTest, StringParameterThatReadsAsANumberStaysAString) {
  auto [status, text] = PostRaw(Request());
  ASSERT_EQ(status, 200) << text;
  const json r = json::parse(text);
  const json& c = r["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls") << text;
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << text;
  const json& call = c["message"]["tool_calls"][0]["function"];
  EXPECT_EQ(call["name"], "get_weather");
  const json args = json::parse(call["arguments"].get<std::string>());
  EXPECT_EQ(args, json::parse(R"({"zip": "75001", "days": 3})")) << call["arguments"];
  EXPECT_TRUE(args["zip"].is_string());
}

TEST_F(GlmToolCallServerTest, StreamedArgumentsKeepTheStringToo) {
  json req = Request();
  req["stream"] = true;
  auto [status, text] = PostRaw(req);
  ASSERT_EQ(status, 200) << text;
  std::string arguments;
  for (size_t p = text.find("data: "); p != std::string::npos; p = text.find("data: ", p + 1)) {
    const size_t end = text.find("\n\n", p);
    const std::string data = text.substr(p + 6, end - p - 6);
    if (data == "[DONE]") break;
    const json chunk = json::parse(data);
    for (const json& c : chunk["choices"]) {
      if (!c["delta"].contains("tool_calls")) continue;
      for (const json& t : c["delta"]["tool_calls"]) arguments += t["function"]["arguments"].get<std::string>();
    }
  }
  ASSERT_TRUE(json::accept(arguments)) << arguments;
  EXPECT_EQ(json::parse(arguments), json::parse(R"({"zip": "75001", "days": 3})")) << arguments;
}

}  // namespace
}  // namespace pagoda::server
