// The KV page integrity error through the real server (in process, on
// stories260K): an engine with a planted fault (EngineOptions::
// testing_kv_fault) answers the affected request with HTTP 500
// "kv_cache_integrity" (an SSE error event when streaming), counts it in
// /metrics, and serves the next request normally.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "http/client.h"
#include "server/openai_server.h"
#include "support/metrics_text.h"
#include "support/test_paths.h"
#include "tokenizer/chat_template.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
constexpr const char* kModel = "stories260K.gguf";

class IntegrityServerTest : public ::testing::TestWithParam<KvFault> {
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
    EngineOptions eo;
    eo.n_ctx = 256;
    eo.testing_kv_fault = GetParam();
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
  // The failure counter, once it is non-zero (the engine publishes its
  // stats after the step that ended the request); 0 if it stays so.
  int64_t Failures() {
    for (int i = 0; i < 200; ++i) {
      auto m = client_->Send("GET", "/metrics");
      EXPECT_TRUE(m.ok());
      if (!m.ok()) return 0;
      const auto n = testing::MetricValue(m->body, "kv_cache_integrity_failures_total");
      EXPECT_TRUE(n.has_value());
      if (!n) return 0;
      if (*n != 0) return static_cast<int64_t>(*n);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }

  std::shared_ptr<const GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<OpenAiServer> server_;
  std::unique_ptr<http::Client> client_;
};

const json kBody = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}};

TEST_P(IntegrityServerTest, AffectedRequestGets500KvCacheIntegrity) {
  // kSwap needs two decoding sequences: one request with n = 2.
  json body = kBody;
  if (GetParam() == KvFault::kSwap) body["n"] = 2;
  auto r = client_->Send("POST", "/v1/completions", body.dump());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500) << r->body;
  const json e = json::parse(r->body, nullptr, false);
  EXPECT_EQ(e["error"]["code"], "kv_cache_integrity") << r->body;
  EXPECT_EQ(e["error"]["type"], "server_error");
  EXPECT_EQ(Failures(), GetParam() == KvFault::kSwap ? 2 : 1) << "one per stopped sequence";
  // The fault is planted once: the next request is served.
  auto ok = client_->Send("POST", "/v1/completions", kBody.dump());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_P(IntegrityServerTest, StreamingRequestGetsAnSseErrorEvent) {
  json body = kBody;
  body["stream"] = true;
  if (GetParam() == KvFault::kSwap) body["n"] = 2;
  std::string error_code;
  bool done = false;
  int deltas = 0;
  auto r = client_->SendSse("POST", "/v1/completions", body.dump(), [&](std::string_view data) {
    if (data == "[DONE]") {
      done = true;
      return true;
    }
    json c = json::parse(data, nullptr, false);
    if (c.contains("error")) error_code = c["error"]["code"].get<std::string>();
    else ++deltas;
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(error_code, "kv_cache_integrity");
  EXPECT_TRUE(done);
  EXPECT_GT(deltas, 0) << "the fault is planted after tokens were streamed";
  EXPECT_EQ(Failures(), GetParam() == KvFault::kSwap ? 2 : 1);
}

INSTANTIATE_TEST_SUITE_P(Kinds, IntegrityServerTest,
                         ::testing::Values(KvFault::kReuse, KvFault::kRetag, KvFault::kSwap),
                         [](const auto& info) {
                           return info.param == KvFault::kReuse   ? std::string("Reuse")
                                  : info.param == KvFault::kRetag ? std::string("Retag")
                                                                  : std::string("Swap");
                         });

}  // namespace
}  // namespace pagoda::server
