// `pagoda admin` as an operator runs it: the real binary against an
// in-process http::Server serving the admin routes (with the admin-key
// guard) over a SQLite store in a temp dir. Tables by default, --json, CSV;
// the key's secret printed once with a warning; exit 1 with the server's
// message on API errors and 2 on usage errors; the admin key never printed.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "control/admin_routes.h"
#include "http/auth.h"
#include "http/server.h"
#include "tenancy/store_backends.h"
#include "tenancy/tenant_cache.h"

namespace pagoda {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr char kAdminKey[] = "cli-test-admin-key-0123456789";
constexpr char kPepper[] = "cli-pepper";

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class AdminCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = backend_.Open();
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(store).value();
    http::Router router;
    router.AddGuard("/admin/", [](const http::Request& r) { return http::RequireBearerToken(r, kAdminKey); });
    control::AdminRouteOptions o;
    o.pepper = kPepper;
    control::AddControlAdminRoutes(router, *store_, o);
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, std::move(router));
    ASSERT_TRUE(server_->Start().ok());
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
    ::setenv("PAGODA_ADMIN_KEY", kAdminKey, 1);
    ::unsetenv("PAGODA_ADMIN_URL");
  }
  void TearDown() override {
    if (server_) server_->Shutdown(1s);
  }

  // `pagoda admin ARGS --url URL`.
  CliRun Admin(const std::vector<std::string>& args, bool with_url = true) {
    const std::string err_path = backend_dir_.File("stderr");
    std::string cmd = Quote(PAGODA_BIN) + " admin";
    for (const auto& a : args) cmd.append(" ").append(Quote(a));
    if (with_url) cmd.append(" --url ").append(Quote(url_));
    cmd.append(" 2>").append(Quote(err_path));
    CliRun r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream e(err_path);
    std::stringstream ss;
    ss << e.rdbuf();
    r.err = ss.str();
    // The admin key is never printed, whatever happened.
    EXPECT_EQ(r.out.find(kAdminKey), std::string::npos) << cmd;
    EXPECT_EQ(r.err.find(kAdminKey), std::string::npos) << cmd;
    return r;
  }
  json Json(const std::vector<std::string>& args) {
    std::vector<std::string> with = args;
    with.push_back("--json");
    CliRun r = Admin(with);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  tenancy::testsupport::TempDir backend_dir_;
  tenancy::testsupport::SqliteBackend backend_;
  std::unique_ptr<tenancy::TenantStore> store_;
  std::unique_ptr<http::Server> server_;
  std::string url_;
};

TEST_F(AdminCliTest, CreatesListsShowsAndUpdatesTenants) {
  CliRun r = Admin({"tenants", "create", "acme", "--name", "Acme Corp", "--plan", "provisioned", "--weight", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ID"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("acme"), std::string::npos);
  EXPECT_NE(r.out.find("provisioned"), std::string::npos);

  CliRun list = Admin({"tenants", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("Acme Corp"), std::string::npos) << list.out;
  // Workload classes: the plan's max until one is set.
  EXPECT_NE(list.out.find("MAX_CLASS"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("(plan)"), std::string::npos) << list.out;
  ASSERT_EQ(Admin({"tenants", "update", "acme", "--max-class", "batch"}).exit_code, 0);
  CliRun classes = Admin({"tenants", "list"});
  EXPECT_EQ(classes.out.find("(plan)"), std::string::npos) << classes.out;
  EXPECT_NE(classes.out.find("batch"), std::string::npos) << classes.out;

  json shown = Json({"tenants", "show", "acme"});
  EXPECT_EQ(shown["weight"], 2.0);
  CliRun upd = Admin({"tenants", "update", "acme", "--disabled", "true", "--share-cache", "true"});
  ASSERT_EQ(upd.exit_code, 0) << upd.err;
  auto t = store_->GetTenant("acme");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->disabled);
  EXPECT_TRUE(t->share_cache_across_keys);
  // --url may come from the environment.
  ::setenv("PAGODA_ADMIN_URL", url_.c_str(), 1);
  EXPECT_EQ(Admin({"tenants", "list"}, /*with_url=*/false).exit_code, 0);
}

TEST_F(AdminCliTest, PrintsTheKeySecretOnceWithAWarning) {
  ASSERT_EQ(Admin({"tenants", "create", "acme", "--name", "Acme"}).exit_code, 0);
  CliRun r = Admin({"keys", "create", "acme", "--name", "ci", "--models", "llama,qwen"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t at = r.out.find("pgd-");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string secret = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_EQ(secret.size(), 47u) << secret;
  EXPECT_NE(r.err.find("will not be shown again"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("llama,qwen"), std::string::npos) << r.out;

  tenancy::TenantCache cache(*store_, {kPepper});
  auto auth = cache.Authenticate(secret, 1);
  ASSERT_TRUE(auth.ok()) << auth.status().message();
  const std::string key_id = auth->key.id;

  CliRun list = Admin({"keys", "list", "--tenant", "acme"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find(key_id), std::string::npos);
  EXPECT_EQ(list.out.find(secret), std::string::npos);
  EXPECT_EQ(list.out.find("pgd-"), std::string::npos);
  json listed = Json({"keys", "list"});
  ASSERT_EQ(listed["data"].size(), 1u);
  EXPECT_FALSE(listed["data"][0].contains("key"));

  CliRun rot = Admin({"keys", "rotate", key_id, "--grace-seconds", "3600"});
  ASSERT_EQ(rot.exit_code, 0) << rot.err;
  const size_t at2 = rot.out.find("pgd-");
  ASSERT_NE(at2, std::string::npos) << rot.out;
  const std::string new_secret = rot.out.substr(at2, rot.out.find('\n', at2) - at2);
  EXPECT_NE(new_secret, secret);
  EXPECT_NE(rot.out.find("Replaces " + key_id), std::string::npos) << rot.out;
  EXPECT_NE(rot.err.find("will not be shown again"), std::string::npos);
  EXPECT_TRUE(cache.Authenticate(new_secret, 2).ok());

  CliRun rev = Admin({"keys", "revoke", key_id});
  ASSERT_EQ(rev.exit_code, 0) << rev.err;
  EXPECT_NE(rev.out.find("revoked"), std::string::npos) << rev.out;
  EXPECT_FALSE(cache.Authenticate(secret, 3).ok());
  EXPECT_EQ(Json({"keys", "show", key_id})["status"], "revoked");
}

TEST_F(AdminCliTest, SetsLimitsPlansAndPrices) {
  ASSERT_EQ(Admin({"tenants", "create", "acme", "--name", "Acme"}).exit_code, 0);
  CliRun l = Admin({"limits", "set", "--tenant", "acme", "--rpm", "600", "--tpm", "0"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("600"), std::string::npos);
  EXPECT_NE(l.out.find("unlimited"), std::string::npos) << l.out;
  CliRun ll = Admin({"limits", "list", "--tenant", "acme"});
  EXPECT_NE(ll.out.find("600"), std::string::npos) << ll.out;
  auto rule = store_->GetLimits(tenancy::LimitScope::kTenant, "acme", "");
  ASSERT_TRUE(rule.ok());
  EXPECT_EQ(rule->limits.rpm, 600);
  EXPECT_EQ(Admin({"limits", "delete", "--tenant", "acme"}).exit_code, 0);
  EXPECT_FALSE(store_->GetLimits(tenancy::LimitScope::kTenant, "acme", "").ok());

  CliRun p = Admin({"plans", "set", "acme", "--plan", "provisioned", "--model", "llama", "--tokens-per-second", "500"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("provisioned"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("500"), std::string::npos) << p.out;
  auto res = store_->ListReservations();
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->size(), 1u);
  EXPECT_EQ((*res)[0].tokens_per_second, 500);
  EXPECT_EQ(store_->GetTenant("acme")->plan, tenancy::PlanKind::kProvisioned);
  json plans = Json({"plans", "list"});
  EXPECT_EQ(plans["reservations"]["data"].size(), 1u);

  CliRun pr = Admin({"prices", "set", "llama", "--input", "0.5", "--output", "1.5", "--cached-input", "0.1"});
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  json prices = Json({"prices", "list"});
  ASSERT_EQ(prices["data"].size(), 1u);
  EXPECT_EQ(prices["data"][0]["cached_input_per_mtok"], 0.1);
}

TEST_F(AdminCliTest, ReportsUsageAsTableJsonAndCsv) {
  ASSERT_EQ(Admin({"tenants", "create", "acme", "--name", "Acme"}).exit_code, 0);
  ASSERT_EQ(Admin({"prices", "set", "llama", "--input", "1", "--output", "2"}).exit_code, 0);
  std::vector<tenancy::UsageRecord> records;
  for (int i = 0; i < 10; ++i) {
    tenancy::UsageRecord r;
    r.request_id = "r" + std::to_string(i);
    r.tenant_id = "acme";
    r.key_id = "key_1";
    r.model = "llama";
    r.prompt_tokens = 100'000;
    r.completion_tokens = 50'000;
    r.started_at_ms = 1768003200000 + i * 3'600'000;  // 2026-01-10, hourly
    records.push_back(r);
  }
  ASSERT_TRUE(store_->AppendUsage(records).ok());
  // 10 x (0.1 M input x 1 + 0.05 M output x 2) = 2.0
  CliRun t = Admin({"usage", "--group-by", "tenant,model,day", "--from", "2026-01-10", "--to", "2026-01-10"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("2026-01-10"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("2.000000"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("TOTAL"), std::string::npos) << t.out;
  json j = Json({"usage", "--group-by", "tenant"});
  EXPECT_DOUBLE_EQ(j["total"]["cost"].get<double>(), 2.0);
  CliRun csv = Admin({"usage", "--group-by", "tenant,day", "--csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out,
            "tenant_id,day,requests,errors,prompt_tokens,cached_tokens,completion_tokens,total_ms_sum,ttft_ms_sum,"
            "replica_hours,cost\r\nacme,2026-01-10,10,0,1000000,0,500000,0,0,0.000000,2.000000\r\n");
  CliRun none = Admin({"usage", "--from", "2026-01-11"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("TOTAL"), std::string::npos);
}

TEST_F(AdminCliTest, ExitsOneWithTheServersMessageAndTwoOnUsageErrors) {
  CliRun r = Admin({"tenants", "show", "ghost"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("HTTP 404"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No tenant 'ghost'"), std::string::npos) << r.err;
  r = Admin({"keys", "create", "ghost"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("No tenant"), std::string::npos) << r.err;
  r = Admin({"tenants", "create", "Bad Id!", "--name", "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("HTTP 400"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("param: id"), std::string::npos) << r.err;
  r = Admin({"tenants", "create", "x", "--name", "x", "--plan", "dedicated"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("dedicated_deployment"), std::string::npos) << r.err;

  // Usage errors: 2, before any call.
  EXPECT_EQ(Admin({"tenants", "create", "--name"}).exit_code, 2);
  EXPECT_EQ(Admin({"tenants", "frobnicate"}).exit_code, 2);
  EXPECT_EQ(Admin({"tenants"}).exit_code, 2);
  EXPECT_EQ(Admin({"limits", "set", "--tenant", "a", "--key", "k", "--rpm", "1"}).exit_code, 2);
  EXPECT_EQ(Admin({"limits", "set", "--tenant", "a"}).exit_code, 2);
  EXPECT_EQ(Admin({"limits", "set", "--tenant", "a", "--rpm", "-5"}).exit_code, 2);
  EXPECT_EQ(Admin({"tenants", "update", "a", "--weight", "0"}).exit_code, 2);
  EXPECT_EQ(Admin({"plans", "set", "a", "--model", "m"}).exit_code, 2);
  EXPECT_EQ(Admin({"keys", "create", "a", "--ttl-seconds", "5", "--expires-at", "99999999999"}).exit_code, 2);
  EXPECT_EQ(Admin({"tenants", "list"}, /*with_url=*/false).exit_code, 2);
  EXPECT_EQ(Admin({"tenants", "list", "--url", "ftp://x"}, false).exit_code, 2);
  CliRun no_key = Admin({"tenants", "list", "--admin-key-env", "PAGODA_TEST_UNSET_VAR"});
  EXPECT_EQ(no_key.exit_code, 2);
  EXPECT_NE(no_key.err.find("PAGODA_TEST_UNSET_VAR"), std::string::npos) << no_key.err;

  // A wrong admin key: the server's 401, the key itself never printed.
  ::setenv("PAGODA_TEST_WRONG_KEY", "wrong-admin-key-value", 1);
  CliRun wrong = Admin({"tenants", "list", "--admin-key-env", "PAGODA_TEST_WRONG_KEY"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("HTTP 401"), std::string::npos) << wrong.err;
  EXPECT_EQ(wrong.err.find("wrong-admin-key-value"), std::string::npos) << wrong.err;

  // Nobody listening: 1, naming the URL.
  server_->Shutdown(1s);
  CliRun down = Admin({"tenants", "list"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("cannot reach the admin API"), std::string::npos) << down.err;
}

}  // namespace
}  // namespace pagoda
