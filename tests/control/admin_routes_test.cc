// The admin API on a real http::Server over a real store (a SQLite file and a
// fresh PostgreSQL database: the same suite on both), driven by http::Client:
// every route, its validation errors, a key's secret shown once and never
// again, revocation and rotation seen by the TenantCache, and usage reports
// (JSON and CSV) checked against costs computed here from the records.
#include "control/admin_routes.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "http/auth.h"
#include "http/client.h"
#include "http/server.h"
#include "tenancy/api_key.h"
#include "tenancy/store_backends.h"
#include "tenancy/tenant_cache.h"

namespace pagoda::control {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using tenancy::testsupport::Backend;

constexpr char kAdminKey[] = "admin-secret-for-tests";
constexpr char kPepper[] = "test-pepper";
constexpr int64_t kJan10 = 1768003200000;  // 2026-01-10T00:00:00Z
constexpr int64_t kDay = 86'400'000;

struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
  json j;  // parsed body (discarded when not JSON)

  std::string code() const { return j.is_object() && j.contains("error") ? j["error"].value("code", "") : ""; }
  std::string param() const {
    if (!j.is_object() || !j.contains("error") || !j["error"]["param"].is_string()) return "";
    return j["error"]["param"].get<std::string>();
  }
  std::string message() const { return j.is_object() && j.contains("error") ? j["error"].value("message", "") : ""; }
};

std::ostream& operator<<(std::ostream& os, const Reply& r) { return os << r.status << " " << r.body; }

class AdminRoutesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = Backend::Make(GetParam());
    if (!backend_->ok()) GTEST_SKIP() << backend_->why();
    auto store = backend_->Open();
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(store).value();
    StartServer(*store_);
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown(1s);
    server_.reset();
  }

  void StartServer(tenancy::TenantStore& store) {
    client_.reset();
    if (server_) server_->Shutdown(1s);
    http::Router router;
    router.AddGuard("/admin/", [](const http::Request& r) { return http::RequireBearerToken(r, kAdminKey); });
    AdminRouteOptions o;
    o.pepper = kPepper;
    o.now_ms = [this] { return now_.load(); };
    o.sla = &sla_;
    AddControlAdminRoutes(router, store, o);
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, std::move(router));
    ASSERT_TRUE(server_->Start().ok());
    client_ = std::make_unique<http::Client>("127.0.0.1", server_->port());
  }

  Reply Call(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& key = kAdminKey) {
    http::Headers h;
    if (!key.empty()) h.Add("Authorization", "Bearer " + key);
    if (!body.empty()) h.Add("Content-Type", "application/json");
    auto r = client_->Send(method, target, body, h);
    Reply out;
    if (!r.ok()) {
      ADD_FAILURE() << method << " " << target << ": " << r.status().message();
      return out;
    }
    out.status = r->status;
    out.body = r->body;
    if (const std::string* ct = r->headers.Find("Content-Type")) out.content_type = *ct;
    out.j = json::parse(r->body, nullptr, false);
    return out;
  }
  // A JSON body (a template so that string literals never convert to json).
  template <class J, std::enable_if_t<std::is_same_v<J, json>, int> = 0>
  Reply Call(const std::string& method, const std::string& target, const J& body) {
    return Call(method, target, body.dump());
  }

  std::string CreateTenant(const std::string& id, const std::string& plan = "serverless") {
    json b = {{"id", id}, {"name", "Tenant " + id}, {"plan", plan}};
    if (plan == "dedicated") b["dedicated_deployment"] = id + "-dep";
    Reply r = Call("POST", "/admin/tenants", b);
    EXPECT_EQ(r.status, 201) << r;
    return id;
  }
  // {id, secret}
  std::pair<std::string, std::string> CreateKey(const std::string& tenant, json extra = json::object()) {
    extra["tenant"] = tenant;
    Reply r = Call("POST", "/admin/keys", extra);
    EXPECT_EQ(r.status, 201) << r;
    if (r.status != 201) return {};
    return {r.j["id"].get<std::string>(), r.j["key"].get<std::string>()};
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<tenancy::TenantStore> store_;
  std::unique_ptr<tenancy::TenantStore> extra_store_;
  TenantSla sla_;
  std::atomic<int64_t> now_{kJan10 + 12 * 3600 * 1000LL};
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<http::Client> client_;
};

// Cases that depend on SQLite only (store options) or not on the store at all.
class AdminRoutesSqliteTest : public AdminRoutesTest {};

// ---- tenants ----

TEST_P(AdminRoutesTest, CreatesListsShowsAndUpdatesTenants) {
  Reply r = Call("POST", "/admin/tenants",
                 json{{"id", "acme"}, {"name", "Acme Corp"}, {"plan", "provisioned"}, {"weight", 2.5},
                      {"share_cache_across_keys", true}});
  ASSERT_EQ(r.status, 201) << r;
  EXPECT_EQ(r.j["object"], "tenant");
  EXPECT_EQ(r.j["id"], "acme");
  EXPECT_EQ(r.j["plan"], "provisioned");
  EXPECT_EQ(r.j["weight"], 2.5);
  EXPECT_EQ(r.j["share_cache_across_keys"], true);
  EXPECT_EQ(r.j["disabled"], false);
  EXPECT_TRUE(r.j["dedicated_deployment"].is_null());
  EXPECT_EQ(r.j["created_at"], now_.load() / 1000);

  Reply gen = Call("POST", "/admin/tenants", json{{"name", "No id given"}});
  ASSERT_EQ(gen.status, 201) << gen;
  const std::string gen_id = gen.j["id"];
  EXPECT_EQ(gen_id.rfind("ten_", 0), 0u) << gen_id;
  EXPECT_EQ(gen.j["plan"], "serverless");

  Reply list = Call("GET", "/admin/tenants");
  ASSERT_EQ(list.status, 200) << list;
  EXPECT_EQ(list.j["object"], "list");
  ASSERT_EQ(list.j["data"].size(), 2u);

  Reply show = Call("GET", "/admin/tenants/acme");
  ASSERT_EQ(show.status, 200) << show;
  EXPECT_EQ(show.j["name"], "Acme Corp");

  Reply patch = Call("PATCH", "/admin/tenants/acme",
                     json{{"plan", "dedicated"}, {"dedicated_deployment", "acme-llama"}, {"disabled", true}});
  ASSERT_EQ(patch.status, 200) << patch;
  EXPECT_EQ(patch.j["plan"], "dedicated");
  EXPECT_EQ(patch.j["dedicated_deployment"], "acme-llama");
  EXPECT_EQ(patch.j["disabled"], true);
  EXPECT_EQ(patch.j["weight"], 2.5);  // untouched fields stay
  auto stored = store_->GetTenant("acme");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->plan, tenancy::PlanKind::kDedicated);
  EXPECT_TRUE(stored->disabled);

  Reply dup = Call("POST", "/admin/tenants", json{{"id", "acme"}, {"name", "again"}});
  EXPECT_EQ(dup.status, 409) << dup;
  EXPECT_EQ(dup.code(), "tenant_exists");
}

TEST_P(AdminRoutesTest, RefusesMalformedTenantRequestsWithOpenAiErrors) {
  CreateTenant("acme");
  struct Case {
    std::string body;
    int status;
    std::string code, param;
  };
  const std::vector<Case> cases = {
      {"", 400, "invalid_json", ""},
      {"not json", 400, "invalid_json", ""},
      {"[1,2]", 400, "invalid_json", ""},
      {"\"acme\"", 400, "invalid_json", ""},
      {std::string("{\"name\":\"a\xff\"}"), 400, "invalid_utf8", ""},
      {std::string(200, '[') + std::string(200, ']'), 400, "invalid_json", ""},
      {R"({"name":"x","colour":"red"})", 400, "unknown_parameter", "colour"},
      {R"({"plan":"serverless"})", 400, "missing_required_parameter", "name"},
      {R"({"name":""})", 400, "missing_required_parameter", "name"},
      {R"({"name":42})", 400, "invalid_type", "name"},
      {R"({"name":"x","weight":"heavy"})", 400, "invalid_type", "weight"},
      {R"({"name":"x","weight":0})", 400, "invalid_value", "weight"},
      {R"({"name":"x","weight":-1})", 400, "invalid_value", "weight"},
      {R"({"name":"x","plan":"platinum"})", 400, "invalid_value", "plan"},
      {R"({"name":"x","plan":"dedicated"})", 400, "invalid_value", "dedicated_deployment"},
      {R"({"name":"x","share_cache_across_keys":"yes"})", 400, "invalid_type", "share_cache_across_keys"},
      {R"({"id":"x'; DROP TABLE tenants; --","name":"x"})", 400, "invalid_value", "id"},
      {R"({"id":"Robert","name":"x"})", 400, "invalid_value", "id"},
      {R"({"id":"a\u0000b","name":"x"})", 400, "invalid_value", "id"},
      {R"({"id":")" + std::string(65, 'a') + R"(","name":"x"})", 400, "invalid_value", "id"},
      {R"({"name":")" + std::string(300, 'n') + R"("})", 400, "invalid_value", "name"},
      {R"({"name":"tab\there"})", 400, "invalid_value", "name"},
  };
  for (const Case& c : cases) {
    Reply r = Call("POST", "/admin/tenants", c.body);
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 80) << " -> " << r;
    EXPECT_EQ(r.code(), c.code) << c.body.substr(0, 80) << " -> " << r;
    EXPECT_EQ(r.param(), c.param) << c.body.substr(0, 80) << " -> " << r;
    ASSERT_TRUE(r.j.is_object() && r.j["error"].is_object()) << r;
    EXPECT_EQ(r.j["error"]["type"], "invalid_request_error");
    EXPECT_TRUE(r.j["error"].contains("message") && r.j["error"].contains("param") && r.j["error"].contains("code"));
  }
  // Path ids: SQL-shaped, binary, oversized, unknown.
  for (const std::string& path :
       {std::string("/admin/tenants/x'%20OR%20'1'='1"), std::string("/admin/tenants/%00%ff%fe"),
        "/admin/tenants/" + std::string(5000, 'a'), std::string("/admin/tenants/nobody"), std::string("/admin/tenants/%zz")}) {
    Reply r = Call("GET", path);
    EXPECT_EQ(r.status, 404) << path.substr(0, 60) << " -> " << r;
    EXPECT_EQ(r.code(), "tenant_not_found");
  }
  Reply r = Call("PATCH", "/admin/tenants/acme", json{{"weight", 1}, {"owner", "me"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.param(), "owner");
  r = Call("PATCH", "/admin/tenants/acme", json{{"disabled", "no"}});
  EXPECT_EQ(r.code(), "invalid_type");
  r = Call("PATCH", "/admin/tenants/nobody", json{{"weight", 1}});
  EXPECT_EQ(r.status, 404);
  r = Call("DELETE", "/admin/tenants/acme");
  EXPECT_EQ(r.status, 405);
  r = Call("PUT", "/admin/tenants");
  EXPECT_EQ(r.status, 405);
  r = Call("GET", "/admin/tenants?colour=red");
  EXPECT_EQ(r.code(), "unknown_parameter");
  // Nothing above changed anything.
  Reply list = Call("GET", "/admin/tenants");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.j["data"].size(), 1u);
  EXPECT_EQ(list.j["data"][0]["name"], "Tenant acme");
}

TEST_P(AdminRoutesTest, AdminKeyGuardStaysInFront) {
  Reply r = Call("GET", "/admin/tenants", "", "");
  EXPECT_EQ(r.status, 401);
  r = Call("POST", "/admin/keys", R"({"tenant":"acme"})", "wrong");
  EXPECT_EQ(r.status, 401);
  r = Call("GET", "/admin/keys/key_0123456789abcdef", "", "");
  EXPECT_EQ(r.status, 401);
}

// ---- keys ----

TEST_P(AdminRoutesTest, ShowsTheSecretOnceAndNeverTheHash) {
  CreateTenant("acme");
  Reply r = Call("POST", "/admin/keys", json{{"tenant", "acme"}, {"name", "ci"}, {"models", {"llama", "qwen"}}});
  ASSERT_EQ(r.status, 201) << r;
  const std::string id = r.j["id"], secret = r.j["key"];
  EXPECT_EQ(secret.rfind("pgd-", 0), 0u);
  EXPECT_EQ(r.j["tenant"], "acme");
  EXPECT_EQ(r.j["name"], "ci");
  EXPECT_EQ(r.j["models"], json({"llama", "qwen"}));
  EXPECT_EQ(r.j["status"], "active");
  EXPECT_TRUE(r.j["expires_at"].is_null());
  const std::string hash = tenancy::HashKey(secret, kPepper);
  EXPECT_EQ(r.body.find(hash), std::string::npos);
  EXPECT_FALSE(r.j.contains("hash"));

  for (const std::string& target : {"/admin/keys/" + id, std::string("/admin/keys?tenant=acme"),
                                    std::string("/admin/keys"), std::string("/admin/limits"),
                                    std::string("/admin/usage?group_by=tenant,key")}) {
    Reply again = Call("GET", target);
    ASSERT_EQ(again.status, 200) << target << " " << again;
    EXPECT_EQ(again.body.find(secret), std::string::npos) << target;
    EXPECT_EQ(again.body.find(hash), std::string::npos) << target;
  }
  Reply show = Call("GET", "/admin/keys/" + id);
  EXPECT_FALSE(show.j.contains("key"));
  EXPECT_EQ(show.j["id"], id);
  Reply list = Call("GET", "/admin/keys?tenant=acme");
  ASSERT_EQ(list.j["data"].size(), 1u);
  EXPECT_FALSE(list.j["data"][0].contains("key"));

  // The issued key works, with the same pepper.
  tenancy::TenantCache cache(*store_, {kPepper});
  auto auth = cache.Authenticate("Bearer " + secret, now_.load());
  ASSERT_TRUE(auth.ok()) << auth.status().message();
  EXPECT_EQ(auth->key.id, id);
  EXPECT_TRUE(auth->key.AllowsModel("qwen"));
  EXPECT_FALSE(auth->key.AllowsModel("mistral"));
}

TEST_P(AdminRoutesTest, KeyExpiryFromExpiresAtOrTtl) {
  CreateTenant("acme");
  const int64_t now_s = now_.load() / 1000;
  Reply a = Call("POST", "/admin/keys", json{{"tenant", "acme"}, {"ttl_seconds", 3600}});
  ASSERT_EQ(a.status, 201) << a;
  EXPECT_EQ(a.j["expires_at"], now_s + 3600);
  Reply b = Call("POST", "/admin/keys", json{{"tenant", "acme"}, {"expires_at", now_s + 60}});
  ASSERT_EQ(b.status, 201) << b;
  EXPECT_EQ(b.j["expires_at"], now_s + 60);
  now_ += 120'000;
  Reply show = Call("GET", "/admin/keys/" + b.j["id"].get<std::string>());
  EXPECT_EQ(show.j["status"], "expired");
  tenancy::TenantCache cache(*store_, {kPepper});
  EXPECT_FALSE(cache.Authenticate(b.j["key"].get<std::string>(), now_.load()).ok());
  EXPECT_TRUE(cache.Authenticate(a.j["key"].get<std::string>(), now_.load()).ok());
}

TEST_P(AdminRoutesTest, RevokedKeyIsRefusedByTheTenantCache) {
  CreateTenant("acme");
  auto [id, secret] = CreateKey("acme");
  tenancy::TenantCache cache(*store_, {kPepper});
  ASSERT_TRUE(cache.Authenticate(secret, now_.load()).ok());
  Reply r = Call("POST", "/admin/keys/" + id + "/revoke");
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.j["status"], "revoked");
  EXPECT_EQ(r.j["revoked_at"], now_.load() / 1000);
  EXPECT_FALSE(r.j.contains("key"));
  auto auth = cache.Authenticate(secret, now_.load());
  ASSERT_FALSE(auth.ok());
  EXPECT_EQ(auth.status().code(), StatusCode::kNotFound);
  // Revoking again keeps the first time.
  now_ += 5000;
  Reply again = Call("POST", "/admin/keys/" + id + "/revoke", "{}");
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(again.j["revoked_at"], r.j["revoked_at"]);
  Reply rotate = Call("POST", "/admin/keys/" + id + "/rotate", "{}");
  EXPECT_EQ(rotate.status, 409);
  EXPECT_EQ(rotate.code(), "key_revoked");
}

TEST_P(AdminRoutesTest, RotationWithGraceKeepsTheOldKeyUntilTheGraceEnds) {
  CreateTenant("acme");
  auto [old_id, old_secret] = CreateKey("acme", json{{"name", "prod"}, {"models", {"llama"}}});
  Reply r = Call("POST", "/admin/keys/" + old_id + "/rotate", json{{"grace_seconds", 60}});
  ASSERT_EQ(r.status, 201) << r;
  const std::string new_id = r.j["id"], new_secret = r.j["key"];
  EXPECT_NE(new_id, old_id);
  EXPECT_NE(new_secret, old_secret);
  EXPECT_EQ(r.j["replaces"], old_id);
  EXPECT_EQ(r.j["name"], "prod");
  EXPECT_EQ(r.j["models"], json({"llama"}));
  EXPECT_EQ(r.j["previous"]["expires_at"], now_.load() / 1000 + 60);
  EXPECT_FALSE(r.j["previous"].contains("key"));
  EXPECT_EQ(r.body.find(old_secret), std::string::npos);

  tenancy::TenantCache cache(*store_, {kPepper});
  EXPECT_TRUE(cache.Authenticate(old_secret, now_.load() + 59'000).ok());
  EXPECT_FALSE(cache.Authenticate(old_secret, now_.load() + 61'000).ok());
  EXPECT_TRUE(cache.Authenticate(new_secret, now_.load() + 61'000).ok());
  // The new secret never comes back either.
  Reply show = Call("GET", "/admin/keys/" + new_id);
  EXPECT_EQ(show.body.find(new_secret), std::string::npos);

  // Without grace (empty body): the old key stops at once.
  Reply now_rot = Call("POST", "/admin/keys/" + new_id + "/rotate");
  ASSERT_EQ(now_rot.status, 201) << now_rot;
  EXPECT_FALSE(cache.Authenticate(new_secret, now_.load()).ok());
  EXPECT_TRUE(cache.Authenticate(now_rot.j["key"].get<std::string>(), now_.load()).ok());
  EXPECT_EQ(now_rot.j["previous"]["status"], "revoked");
}

TEST_P(AdminRoutesTest, RefusesBadKeyRequestsWithoutEchoingSecrets) {
  CreateTenant("acme");
  auto [id, secret] = CreateKey("acme");
  const int64_t now_s = now_.load() / 1000;
  struct Case {
    json body;
    int status;
    std::string code, param;
  };
  const std::vector<Case> cases = {
      {json{{"name", "x"}}, 400, "missing_required_parameter", "tenant"},
      {json{{"tenant", "nobody"}}, 404, "tenant_not_found", "tenant"},
      {json{{"tenant", "acme' OR '1'='1"}}, 400, "invalid_value", "tenant"},
      {json{{"tenant", 7}}, 400, "invalid_type", "tenant"},
      {json{{"tenant", "acme"}, {"models", "llama"}}, 400, "invalid_type", "models"},
      {json{{"tenant", "acme"}, {"models", {"llama", 3}}}, 400, "invalid_type", "models[1]"},
      {json{{"tenant", "acme"}, {"models", {""}}}, 400, "invalid_value", "models[0]"},
      {json{{"tenant", "acme"}, {"expires_at", now_s - 10}}, 400, "invalid_value", "expires_at"},
      {json{{"tenant", "acme"}, {"expires_at", now_s + 10}, {"ttl_seconds", 10}}, 400, "invalid_value", "ttl_seconds"},
      {json{{"tenant", "acme"}, {"ttl_seconds", -5}}, 400, "invalid_value", "ttl_seconds"},
      {json{{"tenant", "acme"}, {"ttl_seconds", 1.5}}, 400, "invalid_type", "ttl_seconds"},
      {json{{"tenant", "acme"}, {"secret", "mine"}}, 400, "unknown_parameter", "secret"},
  };
  for (const Case& c : cases) {
    Reply r = Call("POST", "/admin/keys", c.body);
    EXPECT_EQ(r.status, c.status) << c.body.dump() << " -> " << r;
    EXPECT_EQ(r.code(), c.code) << c.body.dump() << " -> " << r;
    EXPECT_EQ(r.param(), c.param) << c.body.dump() << " -> " << r;
  }
  // A secret where an id belongs, SQL, binary and oversized ids: 404, never echoed.
  const std::vector<std::string> bad_ids = {secret, "key_0000000000000000", "x'%3B%20DELETE%20FROM%20api_keys%3B--",
                                            "%00%01%ff", std::string(4000, 'k'), "pgd-abc"};
  for (const std::string& bad : bad_ids) {
    for (const auto& [method, suffix] : std::vector<std::pair<std::string, std::string>>{
             {"GET", ""}, {"POST", "/revoke"}, {"POST", "/rotate"}}) {
      Reply r = Call(method, "/admin/keys/" + bad + suffix);
      EXPECT_EQ(r.status, 404) << bad.substr(0, 40) << suffix << " -> " << r;
      EXPECT_EQ(r.code(), "key_not_found");
      EXPECT_EQ(r.body.find(secret), std::string::npos);
      EXPECT_EQ(r.body.find("pgd-abc"), std::string::npos);
    }
  }
  EXPECT_EQ(Call("GET", "/admin/keys/" + id + "/revoke").status, 405);
  EXPECT_EQ(Call("POST", "/admin/keys/" + id).status, 405);
  EXPECT_EQ(Call("POST", "/admin/keys/" + id + "/delete").status, 404);
  EXPECT_EQ(Call("POST", "/admin/keys/" + id + "/rotate", json{{"grace_seconds", -1}}).code(), "invalid_value");
  EXPECT_EQ(Call("POST", "/admin/keys/" + id + "/rotate", json{{"grace", 5}}).code(), "unknown_parameter");
  EXPECT_EQ(Call("POST", "/admin/keys/" + id + "/rotate", "[]").code(), "invalid_json");
  EXPECT_EQ(Call("GET", "/admin/keys?tenant=nobody").status, 404);
  EXPECT_EQ(Call("GET", "/admin/keys?tenant=%00").status, 400);
  EXPECT_EQ(Call("GET", "/admin/keys?tenant=a&tenant=b").status, 400);
  // The key is still valid and still the only one.
  Reply list = Call("GET", "/admin/keys");
  ASSERT_EQ(list.j["data"].size(), 1u);
  EXPECT_EQ(list.j["data"][0]["status"], "active");
}

// ---- limits, reservations, prices ----

TEST_P(AdminRoutesTest, SetsListsMergesAndDeletesLimits) {
  CreateTenant("acme");
  CreateTenant("other");
  auto [key_id, secret] = CreateKey("acme");
  Reply r = Call("PUT", "/admin/limits", json{{"scope", "tenant"}, {"id", "acme"}, {"rpm", 600}, {"tpm", 100000}});
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.j, (json{{"object", "limit"}, {"scope", "tenant"}, {"id", "acme"}, {"model", ""}, {"rpm", 600},
                       {"tpm", 100000}, {"concurrent", 0}}));
  // A later PUT with one field keeps the others.
  r = Call("PUT", "/admin/limits", json{{"scope", "tenant"}, {"id", "acme"}, {"concurrent", 4}});
  EXPECT_EQ(r.j["rpm"], 600);
  EXPECT_EQ(r.j["concurrent"], 4);
  r = Call("PUT", "/admin/limits", json{{"scope", "key"}, {"id", key_id}, {"model", "llama"}, {"rpm", 10}});
  ASSERT_EQ(r.status, 200) << r;
  Call("PUT", "/admin/limits", json{{"scope", "tenant"}, {"id", "other"}, {"rpm", 1}});

  Reply list = Call("GET", "/admin/limits?tenant=acme");
  ASSERT_EQ(list.status, 200) << list;
  ASSERT_EQ(list.j["data"].size(), 2u) << list;
  EXPECT_EQ(Call("GET", "/admin/limits").j["data"].size(), 3u);

  // The rules reach the per-request path.
  tenancy::TenantCache cache(*store_, {kPepper});
  auto auth = cache.Authenticate(secret, now_.load());
  ASSERT_TRUE(auth.ok());
  auto rules = cache.LimitsFor(*auth, "llama");
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[0].limits.rpm, 10);
  EXPECT_EQ((*rules)[1].limits.concurrent, 4);

  struct Case {
    json body;
    int status;
    std::string code, param;
  };
  const std::vector<Case> cases = {
      {json{{"scope", "tenant"}, {"id", "acme"}, {"rpm", -1}}, 400, "invalid_value", "rpm"},
      {json{{"scope", "tenant"}, {"id", "acme"}, {"tpm", 1.5}}, 400, "invalid_type", "tpm"},
      {json{{"scope", "tenant"}, {"id", "acme"}, {"concurrent", "4"}}, 400, "invalid_type", "concurrent"},
      {json{{"scope", "tenant"}, {"id", "acme"}}, 400, "missing_required_parameter", "rpm"},
      {json{{"scope", "org"}, {"id", "acme"}, {"rpm", 1}}, 400, "invalid_value", "scope"},
      {json{{"id", "acme"}, {"rpm", 1}}, 400, "missing_required_parameter", "scope"},
      {json{{"scope", "tenant"}, {"rpm", 1}}, 400, "missing_required_parameter", "id"},
      {json{{"scope", "tenant"}, {"id", "nobody"}, {"rpm", 1}}, 404, "tenant_not_found", "id"},
      {json{{"scope", "key"}, {"id", "key_00000000deadbeef"}, {"rpm", 1}}, 404, "key_not_found", "id"},
      {json{{"scope", "tenant"}, {"id", "1; DROP TABLE limits"}, {"rpm", 1}}, 400, "invalid_value", "id"},
      {json{{"scope", "tenant"}, {"id", "acme"}, {"rpm", 1}, {"rph", 1}}, 400, "unknown_parameter", "rph"},
  };
  for (const Case& c : cases) {
    Reply e = Call("PUT", "/admin/limits", c.body);
    EXPECT_EQ(e.status, c.status) << c.body.dump() << " -> " << e;
    EXPECT_EQ(e.code(), c.code) << c.body.dump() << " -> " << e;
    EXPECT_EQ(e.param(), c.param) << c.body.dump() << " -> " << e;
  }

  Reply del = Call("DELETE", "/admin/limits?scope=key&id=" + key_id + "&model=llama");
  ASSERT_EQ(del.status, 200) << del;
  EXPECT_EQ(del.j["deleted"], true);
  EXPECT_EQ(Call("DELETE", "/admin/limits?scope=key&id=" + key_id + "&model=llama").status, 404);
  EXPECT_EQ(Call("DELETE", "/admin/limits?scope=tenant").code(), "missing_required_parameter");
  EXPECT_EQ(Call("DELETE", "/admin/limits?scope=x&id=acme").code(), "invalid_value");
  EXPECT_EQ(Call("GET", "/admin/limits?tenant=nobody").status, 404);
  EXPECT_EQ(Call("GET", "/admin/limits?tenant=acme").j["data"].size(), 1u);
}

TEST_P(AdminRoutesTest, SetsListsAndDeletesReservations) {
  CreateTenant("acme", "provisioned");
  Reply r = Call("PUT", "/admin/reservations", json{{"tenant", "acme"}, {"model", "llama"}, {"tokens_per_second", 500}});
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.j["tokens_per_second"], 500.0);
  r = Call("PUT", "/admin/reservations", json{{"tenant", "acme"}, {"model", "llama"}, {"tokens_per_second", 750.5}});
  ASSERT_EQ(r.status, 200);
  Reply list = Call("GET", "/admin/reservations");
  ASSERT_EQ(list.j["data"].size(), 1u);
  EXPECT_EQ(list.j["data"][0]["tokens_per_second"], 750.5);
  EXPECT_EQ(Call("GET", "/admin/reservations?tenant=acme").j["data"].size(), 1u);

  tenancy::TenantCache cache(*store_, {kPepper});
  auto [id, secret] = CreateKey("acme");
  ASSERT_TRUE(cache.Authenticate(secret, now_.load()).ok());
  auto res = cache.ReservationFor("acme", "llama");
  ASSERT_TRUE(res.ok() && res->has_value());
  EXPECT_EQ((*res)->tokens_per_second, 750.5);

  EXPECT_EQ(Call("PUT", "/admin/reservations", json{{"tenant", "acme"}, {"model", "llama"}, {"tokens_per_second", 0}})
                .param(),
            "tokens_per_second");
  EXPECT_EQ(Call("PUT", "/admin/reservations", json{{"tenant", "acme"}, {"tokens_per_second", 1}}).param(), "model");
  EXPECT_EQ(Call("PUT", "/admin/reservations", json{{"tenant", "ghost"}, {"model", "m"}, {"tokens_per_second", 1}})
                .status,
            404);
  EXPECT_EQ(Call("DELETE", "/admin/reservations?tenant=acme&model=qwen").status, 404);
  EXPECT_EQ(Call("DELETE", "/admin/reservations?tenant=acme").status, 400);
  Reply del = Call("DELETE", "/admin/reservations?tenant=acme&model=llama");
  ASSERT_EQ(del.status, 200) << del;
  EXPECT_EQ(Call("GET", "/admin/reservations").j["data"].size(), 0u);
}

TEST_P(AdminRoutesTest, SetsListsAndDeletesPrices) {
  Reply r = Call("PUT", "/admin/prices",
                 json{{"model", "llama"}, {"input_per_mtok", 0.5}, {"cached_input_per_mtok", 0.1},
                      {"output_per_mtok", 1.5}, {"replica_hour", 2}});
  ASSERT_EQ(r.status, 200) << r;
  r = Call("PUT", "/admin/prices", json{{"model", "qwen"}, {"input_per_mtok", 1}, {"output_per_mtok", 3}});
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.j["cached_input_per_mtok"], 1.0);  // no discount unless priced
  Reply list = Call("GET", "/admin/prices");
  ASSERT_EQ(list.j["data"].size(), 2u);
  EXPECT_EQ(list.j["data"][0]["model"], "llama");
  EXPECT_EQ(list.j["data"][0]["replica_hour"], 2.0);

  EXPECT_EQ(Call("PUT", "/admin/prices", json{{"model", "m"}, {"input_per_mtok", -1}, {"output_per_mtok", 1}}).param(),
            "input_per_mtok");
  EXPECT_EQ(Call("PUT", "/admin/prices", json{{"model", "m"}, {"input_per_mtok", 1}}).param(), "output_per_mtok");
  EXPECT_EQ(Call("PUT", "/admin/prices", json{{"input_per_mtok", 1}, {"output_per_mtok", 1}}).param(), "model");
  EXPECT_EQ(Call("PUT", "/admin/prices", R"({"model":"m","input_per_mtok":1,"output_per_mtok":1e400})").status, 400);
  EXPECT_EQ(Call("DELETE", "/admin/prices?model=mistral").status, 404);
  EXPECT_EQ(Call("DELETE", "/admin/prices").status, 400);
  EXPECT_EQ(Call("DELETE", "/admin/prices?model=qwen").status, 200);
  EXPECT_EQ(Call("GET", "/admin/prices").j["data"].size(), 1u);
}

// ---- workload classes and batch pricing ----

TEST_P(AdminRoutesTest, SetsWorkloadClassesOfTenantsAndKeys) {
  Reply r = Call("POST", "/admin/tenants",
                 json{{"id", "acme"}, {"name", "Acme"}, {"max_class", "batch"}, {"default_class", "batch"}});
  ASSERT_EQ(r.status, 201) << r;
  EXPECT_EQ(r.j["max_class"], "batch");
  EXPECT_EQ(r.j["default_class"], "batch");
  Reply plain = Call("POST", "/admin/tenants", json{{"id", "plain"}, {"name", "Plain"}});
  ASSERT_EQ(plain.status, 201) << plain;
  EXPECT_TRUE(plain.j["max_class"].is_null());  // the plan's
  EXPECT_EQ(plain.j["default_class"], "interactive");

  Reply up = Call("PATCH", "/admin/tenants/acme", json{{"max_class", "realtime"}});
  ASSERT_EQ(up.status, 200) << up;
  EXPECT_EQ(up.j["max_class"], "realtime");
  EXPECT_EQ(up.j["default_class"], "batch");  // untouched
  EXPECT_EQ(store_->GetTenant("acme")->max_class, WorkloadClass::kRealtime);
  Reply cleared = Call("PATCH", "/admin/tenants/acme", R"({"max_class":null})");
  ASSERT_EQ(cleared.status, 200) << cleared;
  EXPECT_TRUE(cleared.j["max_class"].is_null());
  EXPECT_FALSE(store_->GetTenant("acme")->max_class.has_value());

  Reply key = Call("POST", "/admin/keys", json{{"tenant", "acme"}, {"max_class", "interactive"}});
  ASSERT_EQ(key.status, 201) << key;
  EXPECT_EQ(key.j["max_class"], "interactive");
  EXPECT_EQ(store_->GetKey(key.j["id"].get<std::string>())->max_class, WorkloadClass::kInteractive);
  Reply inherit = Call("POST", "/admin/keys", json{{"tenant", "acme"}});
  ASSERT_EQ(inherit.status, 201) << inherit;
  EXPECT_TRUE(inherit.j["max_class"].is_null());
  EXPECT_TRUE(Call("GET", "/admin/keys/" + inherit.j["id"].get<std::string>()).j["max_class"].is_null());

  // Bad values: 400 naming the field; nothing changed.
  struct Case {
    std::string method, path;
    json body;
    std::string param;
  };
  const std::vector<Case> bad = {
      {"POST", "/admin/tenants", json{{"name", "x"}, {"max_class", "gold"}}, "max_class"},
      {"POST", "/admin/tenants", json{{"name", "x"}, {"default_class", "flex"}}, "default_class"},
      {"POST", "/admin/tenants", json{{"name", "x"}, {"max_class", 2}}, "max_class"},
      {"PATCH", "/admin/tenants/acme", json{{"default_class", "urgent"}}, "default_class"},
      {"PATCH", "/admin/tenants/acme", json{{"default_class", nullptr}, {"max_class", ""}}, "max_class"},
      {"POST", "/admin/keys", json{{"tenant", "acme"}, {"max_class", "Realtime"}}, "max_class"},
      {"POST", "/admin/keys", json{{"tenant", "acme"}, {"max_class", json::array({"batch"})}}, "max_class"},
  };
  for (const Case& c : bad) {
    Reply b = Call(c.method, c.path, c.body);
    EXPECT_EQ(b.status, 400) << c.body.dump() << " " << b;
    EXPECT_EQ(b.param(), c.param) << c.body.dump() << " " << b;
    EXPECT_NE(b.message().find(c.param), std::string::npos) << b;
  }
  EXPECT_EQ(Call("GET", "/admin/tenants").j["data"].size(), 2u);
  EXPECT_EQ(store_->GetTenant("acme")->default_class, WorkloadClass::kBatch);
}

TEST_P(AdminRoutesTest, SetsTheBatchFactorAndReportsByServiceTier) {
  Reply r = Call("PUT", "/admin/prices",
                 json{{"model", "m"}, {"input_per_mtok", 0.15}, {"cached_input_per_mtok", 0.075},
                      {"output_per_mtok", 0.6}, {"batch_factor", 0.5}});
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.j["batch_factor"], 0.5);
  Reply other = Call("PUT", "/admin/prices", json{{"model", "n"}, {"input_per_mtok", 1}, {"output_per_mtok", 1}});
  EXPECT_EQ(other.j["batch_factor"], 1.0);  // absent: no discount
  for (const json& f : {json(0), json(-0.5), json(1.01), json("half")}) {
    Reply b = Call("PUT", "/admin/prices",
                   json{{"model", "m"}, {"input_per_mtok", 1}, {"output_per_mtok", 1}, {"batch_factor", f}});
    EXPECT_EQ(b.status, 400) << f.dump() << " " << b;
    EXPECT_EQ(b.param(), "batch_factor") << b;
  }
  EXPECT_EQ(Call("GET", "/admin/prices").j["data"][0]["batch_factor"], 0.5);

  CreateTenant("acme");
  auto usage = [](std::string id, int64_t prompt, int64_t cached, int64_t completion, WorkloadClass tier) {
    tenancy::UsageRecord u;
    u.request_id = std::move(id);
    u.tenant_id = "acme";
    u.key_id = "key_1";
    u.model = "m";
    u.prompt_tokens = prompt;
    u.cached_tokens = cached;
    u.completion_tokens = completion;
    u.started_at_ms = kJan10;
    u.service_tier = tier;
    return u;
  };
  const std::vector<tenancy::UsageRecord> records = {
      usage("r1", 1'234'567, 234'567, 345'678, WorkloadClass::kInteractive),
      usage("r2", 7'654'321, 654'321, 876'543, WorkloadClass::kBatch)};
  ASSERT_TRUE(store_->AppendUsage(records).ok());
  // By hand: 0.374999325 interactive + 0.8124999375 batch (half price).
  Reply total = Call("GET", "/admin/usage?group_by=tenant");
  ASSERT_EQ(total.status, 200) << total;
  ASSERT_EQ(total.j["rows"].size(), 1u);
  EXPECT_FALSE(total.j["rows"][0].contains("service_tier"));
  EXPECT_NEAR(total.j["rows"][0]["cost"].get<double>(), 1.1874992625, 1e-12);
  Reply tiers = Call("GET", "/admin/usage?group_by=tenant,service_tier");
  ASSERT_EQ(tiers.status, 200) << tiers;
  EXPECT_EQ(tiers.j["group_by"], json::array({"tenant", "service_tier"}));
  ASSERT_EQ(tiers.j["rows"].size(), 2u);
  EXPECT_EQ(tiers.j["rows"][0]["service_tier"], "batch");
  EXPECT_NEAR(tiers.j["rows"][0]["cost"].get<double>(), 0.8124999375, 1e-12);
  EXPECT_EQ(tiers.j["rows"][1]["service_tier"], "interactive");
  Reply csv = Call("GET", "/admin/usage?group_by=service_tier&format=csv");
  ASSERT_EQ(csv.status, 200) << csv;
  EXPECT_EQ(csv.body.rfind("service_tier,requests,", 0), 0u) << csv.body;
  EXPECT_EQ(Call("GET", "/admin/usage?group_by=tier").param(), "group_by");
}

// ---- usage ----

struct Expected {
  int64_t requests = 0, errors = 0, prompt = 0, cached = 0, completion = 0;
  double cost = 0;
};

std::string Day(int64_t ms) {
  const std::time_t t = ms / 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::vector<std::string> Split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (;;) {
    const size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next - pos));
    if (next == std::string::npos) return out;
    pos = next + sep.size();
  }
}

TEST_P(AdminRoutesTest, UsageAggregatesByTenantKeyModelAndDayAsJsonAndCsv) {
  CreateTenant("acme");
  CreateTenant("beta", "dedicated");
  auto k1 = CreateKey("acme").first;
  auto k2 = CreateKey("acme").first;
  auto k3 = CreateKey("beta").first;
  // Prices: llama priced, qwen priced, mystery unpriced.
  const std::map<std::string, tenancy::Price> prices = {
      {"llama", {"llama", 0.5, 0.125, 1.5, 2.0}},
      {"qwen", {"qwen", 1.0, 0.25, 4.0, 3.0}},
  };
  for (const auto& [m, p] : prices) {
    ASSERT_EQ(Call("PUT", "/admin/prices",
                   json{{"model", m}, {"input_per_mtok", p.input_per_mtok},
                        {"cached_input_per_mtok", p.cached_input_per_mtok}, {"output_per_mtok", p.output_per_mtok},
                        {"replica_hour", p.replica_hour}})
                  .status,
              200);
  }
  // 60 records over 3 days, 3 keys, 3 models, some errors.
  std::vector<tenancy::UsageRecord> records;
  const std::vector<std::tuple<std::string, std::string>> keys = {{"acme", k1}, {"acme", k2}, {"beta", k3}};
  const std::vector<std::string> models = {"llama", "qwen", "mystery"};
  for (int i = 0; i < 60; ++i) {
    tenancy::UsageRecord r;
    r.request_id = "req_" + std::to_string(i);
    std::tie(r.tenant_id, r.key_id) = keys[i % 3];
    r.model = models[(i / 3) % 3];
    r.deployment = "d";
    r.prompt_tokens = 1000 + 37 * i;
    r.cached_tokens = (i % 4) * 100;
    r.completion_tokens = 50 + 11 * i;
    r.total_ms = 100 + i;
    r.ttft_ms = 10 + i;
    r.status = i % 7 == 0 ? tenancy::UsageStatus::kError : tenancy::UsageStatus::kOk;
    r.started_at_ms = kJan10 + (i % 3 == 2 ? 0 : (i / 20)) * kDay + i * 60'000;
    records.push_back(r);
  }
  ASSERT_TRUE(store_->AppendUsage(records).ok());
  // Replica-hours of beta's dedicated deployment on Jan 11.
  ASSERT_TRUE(store_->AddReplicaHours({"beta", "beta-dep", "qwen", kJan10 + kDay, 5.5}).ok());

  // Independent expectations: per (tenant, key, model, day), priced per record.
  auto cost_of = [&](const tenancy::UsageRecord& r) {
    auto it = prices.find(r.model);
    if (it == prices.end()) return 0.0;
    const auto& p = it->second;
    return ((r.prompt_tokens - r.cached_tokens) * p.input_per_mtok + r.cached_tokens * p.cached_input_per_mtok +
            r.completion_tokens * p.output_per_mtok) /
           1e6;
  };
  auto expect = [&](bool by_tenant, bool by_key, bool by_model, bool by_day, int64_t from, int64_t to) {
    std::map<std::string, Expected> out;
    auto name = [&](const std::string& t, const std::string& k, const std::string& m, int64_t day) {
      std::string n;
      if (by_tenant) n += t + "|";
      if (by_key) n += k + "|";
      if (by_model) n += m + "|";
      if (by_day) n += Day(day) + "|";
      return n;
    };
    for (const auto& r : records) {
      if (r.started_at_ms < from || r.started_at_ms >= to) continue;
      Expected& e = out[name(r.tenant_id, r.key_id, r.model, r.started_at_ms)];
      e.requests++;
      e.errors += r.status != tenancy::UsageStatus::kOk;
      e.prompt += r.prompt_tokens;
      e.cached += r.cached_tokens;
      e.completion += r.completion_tokens;
      e.cost += cost_of(r);
    }
    const int64_t rh_day = kJan10 + kDay;
    if (rh_day >= from && rh_day < to) {
      out[name("beta", "", "qwen", rh_day)].cost += 5.5 * prices.at("qwen").replica_hour;
    }
    return out;
  };
  auto row_name = [](const json& row) {
    std::string n;
    for (const char* f : {"tenant_id", "key_id", "model", "day"}) {
      if (row.contains(f)) n += row[f].get<std::string>() + "|";
    }
    return n;
  };

  struct Query {
    std::string group_by;
    bool t, k, m, d;
    std::string range;
    int64_t from, to;
  };
  const std::vector<Query> queries = {
      {"tenant", true, false, false, false, "", 0, INT64_MAX},
      {"tenant,key", true, true, false, false, "", 0, INT64_MAX},
      {"tenant,model,day", true, false, true, true, "", 0, INT64_MAX},
      {"key,model", false, true, true, false, "", 0, INT64_MAX},
      {"day", false, false, false, true, "&from=2026-01-11&to=2026-01-11", kJan10 + kDay, kJan10 + 2 * kDay},
      {"tenant,key,model,day", true, true, true, true,
       "&from=" + std::to_string(kJan10 / 1000) + "&to=" + std::to_string((kJan10 + kDay) / 1000), kJan10,
       kJan10 + kDay},
      {"none", false, false, false, false, "", 0, INT64_MAX},
  };
  for (const Query& q : queries) {
    SCOPED_TRACE(q.group_by + q.range);
    const auto want = expect(q.t, q.k, q.m, q.d, q.from, q.to);
    Reply r = Call("GET", "/admin/usage?group_by=" + q.group_by + q.range);
    ASSERT_EQ(r.status, 200) << r;
    EXPECT_EQ(r.j["object"], "usage_report");
    ASSERT_EQ(r.j["rows"].size(), want.size()) << r.body;
    double total_cost = 0;
    int64_t total_requests = 0;
    for (const json& row : r.j["rows"]) {
      const auto it = want.find(row_name(row));
      ASSERT_NE(it, want.end()) << row.dump();
      EXPECT_EQ(row["requests"], it->second.requests) << row.dump();
      EXPECT_EQ(row["errors"], it->second.errors) << row.dump();
      EXPECT_EQ(row["prompt_tokens"], it->second.prompt) << row.dump();
      EXPECT_EQ(row["cached_tokens"], it->second.cached) << row.dump();
      EXPECT_EQ(row["completion_tokens"], it->second.completion) << row.dump();
      EXPECT_NEAR(row["cost"].get<double>(), it->second.cost, 1e-9) << row.dump();
      total_cost += it->second.cost;
      total_requests += it->second.requests;
    }
    EXPECT_NEAR(r.j["total"]["cost"].get<double>(), total_cost, 1e-9);
    EXPECT_EQ(r.j["total"]["requests"], total_requests);
    EXPECT_EQ(r.j["unpriced_models"], json({"mystery"}));

    // The CSV has the same rows, RFC 4180 with CRLF.
    Reply csv = Call("GET", "/admin/usage?format=csv&group_by=" + q.group_by + q.range);
    ASSERT_EQ(csv.status, 200) << csv;
    EXPECT_EQ(csv.content_type.rfind("text/csv", 0), 0u) << csv.content_type;
    auto lines = Split(csv.body, "\r\n");
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back(), "");
    lines.pop_back();
    ASSERT_EQ(lines.size(), want.size() + 1) << csv.body;
    const auto header = Split(lines[0], ",");
    for (size_t i = 1; i < lines.size(); ++i) {
      const auto fields = Split(lines[i], ",");
      ASSERT_EQ(fields.size(), header.size()) << lines[i];
      json row;
      for (size_t f = 0; f < fields.size(); ++f) row[header[f]] = fields[f];
      const auto it = want.find(row_name(row));
      ASSERT_NE(it, want.end()) << lines[i];
      EXPECT_EQ(std::stoll(row["requests"].get<std::string>()), it->second.requests);
      EXPECT_EQ(std::stoll(row["completion_tokens"].get<std::string>()), it->second.completion);
      EXPECT_NEAR(std::stod(row["cost"].get<std::string>()), it->second.cost, 1e-6) << lines[i];
    }
  }

  // Filters.
  Reply only_k2 = Call("GET", "/admin/usage?group_by=key&key=" + k2);
  ASSERT_EQ(only_k2.status, 200) << only_k2;
  ASSERT_EQ(only_k2.j["rows"].size(), 1u);
  EXPECT_EQ(only_k2.j["rows"][0]["key_id"], k2);
  EXPECT_EQ(only_k2.j["rows"][0]["requests"], 20);
  Reply only_beta_qwen = Call("GET", "/admin/usage?group_by=tenant&tenant=beta&model=qwen");
  ASSERT_EQ(only_beta_qwen.status, 200);
  ASSERT_EQ(only_beta_qwen.j["rows"].size(), 1u);
  EXPECT_DOUBLE_EQ(only_beta_qwen.j["rows"][0]["replica_hours"].get<double>(), 5.5);

  // Bad queries.
  EXPECT_EQ(Call("GET", "/admin/usage?group_by=tenant,colour").param(), "group_by");
  EXPECT_EQ(Call("GET", "/admin/usage?format=xml").param(), "format");
  EXPECT_EQ(Call("GET", "/admin/usage?from=2026-02-30").param(), "from");
  EXPECT_EQ(Call("GET", "/admin/usage?from=yesterday").param(), "from");
  EXPECT_EQ(Call("GET", "/admin/usage?from=2026-01-12&to=2026-01-10").param(), "to");
  EXPECT_EQ(Call("GET", "/admin/usage?tenant=ghost").status, 404);
  EXPECT_EQ(Call("GET", "/admin/usage?key=key_0000000000000000").status, 404);
  EXPECT_EQ(Call("GET", "/admin/usage?tenant=%27%20OR%201%3D1").status, 400);
  EXPECT_EQ(Call("GET", "/admin/usage?limit=5").code(), "unknown_parameter");
  EXPECT_EQ(Call("GET", "/admin/usage?from=%zz").status, 400);
}

TEST_P(AdminRoutesTest, ServesTenantSlaFigures) {
  RequestTiming t;
  t.tenant = "acme";
  t.model = "llama";
  t.ttft_seconds = 0.2;
  t.completion_tokens = 30;
  sla_.Record(t);
  Reply r = Call("GET", "/admin/sla");
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.j, sla_.ToJson());
  EXPECT_NE(r.body.find("acme"), std::string::npos);
}

TEST_P(AdminRoutesSqliteTest, UnusableStoreAnswers503NamingTheOperation) {  // read-only: a SQLite option
  CreateTenant("acme");
  tenancy::StoreOptions ro;
  ro.read_only = true;
  auto read_only = backend_->Open(ro);
  ASSERT_TRUE(read_only.ok()) << read_only.status().message();
  extra_store_ = std::move(read_only).value();
  StartServer(*extra_store_);
  Reply list = Call("GET", "/admin/tenants");
  EXPECT_EQ(list.status, 200) << list;  // reads still work
  Reply r = Call("POST", "/admin/tenants", json{{"id", "new"}, {"name", "n"}});
  EXPECT_EQ(r.status, 503) << r;
  EXPECT_EQ(r.code(), "store_unavailable");
  EXPECT_EQ(r.j["error"]["type"], "server_error");
  EXPECT_NE(r.message().find("CreateTenant"), std::string::npos) << r;
  Reply k = Call("POST", "/admin/keys", json{{"tenant", "acme"}});
  EXPECT_EQ(k.status, 503) << k;
  EXPECT_EQ(k.body.find("pgd-"), std::string::npos) << k;  // the refused secret is not in the error
}

TEST_P(AdminRoutesTest, SurvivesManyConcurrentAdminRequests) {
  CreateTenant("acme");
  std::vector<std::thread> threads;
  std::atomic<int> created{0}, failed{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      http::Client c("127.0.0.1", server_->port());
      http::Headers h;
      h.Add("Authorization", std::string("Bearer ") + kAdminKey);
      for (int i = 0; i < 10; ++i) {
        auto r = c.Send("POST", "/admin/keys", json{{"tenant", "acme"}, {"name", std::to_string(t)}}.dump(), h);
        (r.ok() && r->status == 201 ? created : failed)++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(created.load(), 40);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(Call("GET", "/admin/keys?tenant=acme").j["data"].size(), 40u);
}

// Random bytes, wrong JSON types and SQL-shaped strings at every route:
// never a crash or a 5xx; every refusal is an error object.
TEST_P(AdminRoutesSqliteTest, GarbageAtEveryRouteNeverCrashesOrFailsServerSide) {
  CreateTenant("acme");
  auto [key_id, secret] = CreateKey("acme");
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"POST", "/admin/tenants"},        {"PATCH", "/admin/tenants/acme"},
      {"POST", "/admin/keys"},           {"POST", "/admin/keys/" + key_id + "/rotate"},
      {"POST", "/admin/keys/" + key_id + "/revoke"}, {"PUT", "/admin/limits"},
      {"PUT", "/admin/reservations"},    {"PUT", "/admin/prices"}};
  const std::vector<json> values = {nullptr, true, -1, 1e300, "x' OR '1'='1", std::string(1000, 'a'),
                                    json::array({1, "a"}), json::object({{"a", 1}}), "\u0001", "pgd-deadbeef"};
  const std::vector<std::string> fields = {"id", "name", "plan", "weight", "tenant", "models", "expires_at",
                                           "ttl_seconds", "grace_seconds", "scope", "model", "rpm",
                                           "tokens_per_second", "input_per_mtok", "disabled"};
  std::mt19937 rng(7);
  int refused = 0;
  for (int i = 0; i < 400; ++i) {
    const auto& [method, path] = routes[i % routes.size()];
    std::string body;
    if (i % 4 == 0) {
      body.resize(rng() % 64);
      for (char& c : body) c = static_cast<char>(rng());
    } else {
      json b = json::object();
      for (int f = 0; f < 1 + static_cast<int>(rng() % 3); ++f) b[fields[rng() % fields.size()]] = values[rng() % values.size()];
      body = b.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    Reply r = Call(method, path, body);
    ASSERT_GT(r.status, 0);
    ASSERT_LT(r.status, 500) << method << " " << path << " " << body << " -> " << r;
    ASSERT_TRUE(r.j.is_object()) << r;
    if (r.status >= 400) {
      ASSERT_TRUE(r.j["error"].is_object()) << r;
      ++refused;
    }
    EXPECT_EQ(r.body.find(secret), std::string::npos);
  }
  EXPECT_GT(refused, 300);
  // Over the server's body limit: 413 before any handler.
  EXPECT_EQ(Call("POST", "/admin/tenants", std::string(9u << 20, ' ')).status, 413);
}

INSTANTIATE_TEST_SUITE_P(Backends, AdminRoutesTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Backends, AdminRoutesSqliteTest, ::testing::Values("sqlite"),
                         [](const auto& info) { return info.param; });

// Routes without a server: the router alone, and no /admin/sla without a TenantSla.
TEST(AddControlAdminRoutesTest, LeavesSlaOutWithoutATenantSla) {
  tenancy::testsupport::SqliteBackend backend;
  auto store = backend.Open();
  ASSERT_TRUE(store.ok());
  http::Router router;
  AddControlAdminRoutes(router, **store, {});
  http::Server server(http::ServerOptions{}, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  http::Client c("127.0.0.1", server.port());
  auto r = c.Send("GET", "/admin/sla");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  r = c.Send("GET", "/admin/tenants");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  server.Shutdown(1s);
}

}  // namespace
}  // namespace pagoda::control
