// Signed tenant headers through the real server (stories260K on an
// ephemeral port): a verified tenant gets its own prefix-cache scope, seen
// as cached_tokens; forged, stale, replayed or unconfigured headers leave
// the request anonymous.
#include "server/tenant_resolver.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "http/client.h"
#include "server/openai_server.h"
#include "support/test_paths.h"
#include "tenancy/signed_headers.h"
#include "tokenizer/chat_template.h"

namespace pagoda::server {
namespace {

using nlohmann::json;
using std::chrono::seconds;
constexpr const char* kModel = "stories260K.gguf";
constexpr const char* kSecret = "a-replica-secret-of-32-bytes-xyz";

tenancy::TenantContext Tenant(const std::string& id) {
  tenancy::TenantContext t;
  t.tenant = id;
  t.plan = "serverless";
  t.cache_scope = id;
  return t;
}

class TenantResolverTest : public ::testing::Test {
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
  }
  void Start(const std::string& secret) {
    EngineOptions eo;
    eo.n_ctx = 256;
    eo.scheduling = SchedulingMode::kFair;
    ServeOptions so;
    so.port = 0;
    so.model_id = "stories260K";
    so.tenant_secret = secret;
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

  static http::Headers Signed(const tenancy::TenantContext& t, const std::string& request_id,
                              std::chrono::system_clock::time_point now = std::chrono::system_clock::now(),
                              const std::string& secret = kSecret) {
    auto list = tenancy::SignTenantHeaders(t, request_id, secret, now);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    http::Headers h;
    if (list.ok()) {
      for (auto& [n, v] : *list) h.Add(n, v);
    }
    return h;
  }

  // cached_tokens of a completion of long prompt number `variant`.
  int Cached(const http::Headers& headers, int variant = 0) {
    // A completion (no chat template): the variant is in the first block.
    const std::string prompt = std::to_string(variant) +
                               " Once upon a time there was a little girl named Lily. She loved to play outside "
                               "in the park with her friends and her big red ball every day.";
    json body = {{"prompt", prompt}, {"max_tokens", 4}, {"temperature", 0}};
    auto r = client_->Send("POST", "/v1/completions", body.dump(), headers);
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return -1;
    EXPECT_EQ(r->status, 200) << r->body;
    json j = json::parse(r->body, nullptr, false);
    EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 32) << "the prompt must span several KV blocks";
    return j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  }

  std::shared_ptr<const GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<OpenAiServer> server_;
  std::unique_ptr<http::Client> client_;
};

TEST_F(TenantResolverTest, EachVerifiedTenantHasItsOwnCacheScope) {
  Start(kSecret);
  EXPECT_EQ(Cached(Signed(Tenant("acme"), "r1")), 0);
  EXPECT_GT(Cached(Signed(Tenant("acme"), "r2")), 0);  // the same tenant again: a hit
  EXPECT_EQ(Cached(Signed(Tenant("globex"), "r3")), 0);  // the same prompt, another tenant: none
  EXPECT_EQ(Cached(http::Headers()), 0);                 // nor the anonymous tenant
}

TEST_F(TenantResolverTest, ForgedStaleAndTamperedHeadersRunAnonymous) {
  Start(kSecret);
  const auto now = std::chrono::system_clock::now();
  http::Headers other_secret = Signed(Tenant("acme"), "f1", now, "another-secret-of-32-bytes-xyzw");
  http::Headers tampered = Signed(Tenant("globex"), "f2");
  tampered.Set("x-pagoda-cache-scope", "acme");
  tampered.Set("x-pagoda-tenant", "acme");
  http::Headers stale = Signed(Tenant("acme"), "f3", now - seconds(120));
  http::Headers future = Signed(Tenant("acme"), "f4", now + seconds(120));
  http::Headers unsigned_h = Signed(Tenant("acme"), "f5");
  unsigned_h.Set("x-pagoda-signature", "");
  int variant = 1;
  for (const http::Headers* claim : {&other_secret, &tampered, &stale, &future, &unsigned_h}) {
    // acme computes prompt `variant`; a request claiming acme's scope with
    // rejected headers runs anonymous and finds none of acme's blocks.
    EXPECT_EQ(Cached(Signed(Tenant("acme"), "warm" + std::to_string(variant)), variant), 0);
    EXPECT_EQ(Cached(*claim, variant), 0) << "claim " << variant;
    EXPECT_GT(Cached(Signed(Tenant("acme"), "check" + std::to_string(variant)), variant), 0);
    ++variant;
  }
}

TEST_F(TenantResolverTest, ReplayedHeadersDoNotReachTheTenantsScope) {
  Start(kSecret);
  const http::Headers h = Signed(Tenant("acme"), "once");
  EXPECT_EQ(Cached(h), 0);                                 // acme: cold
  EXPECT_EQ(Cached(h), 0);                                 // replayed: anonymous, also cold
  EXPECT_GT(Cached(Signed(Tenant("acme"), "twice")), 0);  // acme's blocks were there all along
}

TEST_F(TenantResolverTest, TenantHeadersAreIgnoredWithoutASecret) {
  Start("");
  EXPECT_EQ(Cached(http::Headers()), 0);
  // Valid headers, but the replica has no secret: anonymous, so it hits the
  // anonymous request's blocks.
  EXPECT_GT(Cached(Signed(Tenant("acme"), "r1")), 0);
}

TEST_F(TenantResolverTest, RefusesAShortSecret) {
  EngineOptions eo;
  eo.n_ctx = 256;
  ServeOptions so;
  so.port = 0;
  so.tenant_secret = "short";
  auto srv = OpenAiServer::Create(*model_, *tok_, ChatTemplateSource(file_->metadata()), eo, so);
  ASSERT_FALSE(srv.ok());
  EXPECT_EQ(srv.status().message().find("short"), std::string::npos) << "the secret leaked into the error";
}

}  // namespace
}  // namespace pagoda::server
