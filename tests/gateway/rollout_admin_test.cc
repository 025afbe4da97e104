// The rollout admin API on an in-process gateway in front of in-process
// upstreams: start / status / abort, their errors and the key, a rollout that
// completes, one whose new version is unreachable, and one whose new version
// answers 500 (rolled back by the error-rate check while every client
// request still succeeds, the retries going to the old version).
#include "gateway/rollout_admin.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "gateway/gateway.h"
#include "http/client.h"
#include "http/server.h"

namespace pagoda::gateway {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// /health -> 200; chat -> `chat_status` (non-streaming JSON).
class Upstream {
 public:
  explicit Upstream(int chat_status = 200) {
    http::Router r;
    r.Add("GET", "/health", http::SyncHandler([](const http::Request&) { return http::Response::Json(200, "{}"); }));
    r.Add("POST", "/v1/chat/completions", http::SyncHandler([this, chat_status](const http::Request&) {
            ++calls;
            return http::Response::Json(chat_status, chat_status == 200 ? R"({"ok":true})" : R"({"error":{}})");
          }));
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, std::move(r));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~Upstream() { server_->Shutdown(1s); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  std::atomic<int> calls{0};

 private:
  std::unique_ptr<http::Server> server_;
};

// A port with no listener (bound, then closed).
uint16_t DeadPort() {
  http::Server s(http::ServerOptions{}, http::Router{});
  EXPECT_TRUE(s.Start().ok());
  const uint16_t p = s.port();
  s.Shutdown(0ms);
  return p;
}

class RolloutAdminTest : public ::testing::Test {
 protected:
  static std::string Toml(const std::map<std::string, std::vector<std::string>>& versions) {
    std::string toml =
        "[gateway]\nadmin_key_env = \"GW_ADMIN\"\nallow_insecure_keys = true\nhealth_timeout_ms = 300\neject_after_failures = 100\n"
        "[[models]]\nname = \"m\"\npolicy = \"round_robin\"\ncurrent_version = \"v1\"\n";
    for (const auto& [v, urls] : versions) {
      toml += "[[models.deployments]]\nversion = \"" + v + "\"\n";
      for (size_t i = 0; i < urls.size(); ++i) {
        toml += "[[models.deployments.replicas]]\nurl = \"" + urls[i] + "\"\nname = \"" + v + "-" +
                std::to_string(i) + "\"\n";
      }
    }
    return toml;
  }
  void StartGateway(const std::map<std::string, std::vector<std::string>>& versions) {
    const std::string toml = Toml(versions);
    path_ = (std::filesystem::temp_directory_path() / ("pagoda_rollout_test_" + std::to_string(::getpid()) + ".toml"))
                .string();
    std::ofstream(path_) << toml;
    GatewayOptions o;
    o.config_path = path_;
    o.listen_override = "127.0.0.1:0";
    o.health_checks = false;
    o.env = [](const std::string& n) -> std::optional<std::string> {
      if (n == "GW_ADMIN") return "k";
      return std::nullopt;
    };
    auto g = Gateway::Create(o);
    ASSERT_TRUE(g.ok()) << g.status().message();
    gw_ = std::move(g).value();
    ASSERT_TRUE(gw_->Start().ok());
    admin_ = std::make_unique<http::Client>("127.0.0.1", gw_->port(), 10s);
  }
  void TearDown() override {
    if (gw_) gw_->Shutdown(1s);
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  http::ClientResponse Admin(const std::string& method, const std::string& target, const std::string& body = "",
                             const std::string& key = "k") {
    http::Headers h;
    if (!key.empty()) h.Add("Authorization", "Bearer " + key);
    auto r = admin_->Send(method, target, body, h);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : http::ClientResponse{};
  }
  json Status() { return json::parse(Admin("GET", "/admin/rollouts/m").body); }
  // Polls until the rollout is no longer active; its last status.
  json WaitEnded(std::chrono::milliseconds limit = 10s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    json s;
    while (std::chrono::steady_clock::now() < end) {
      s = Status();
      if (!s.value("active", true)) return s;
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "rollout still active: " << s.dump();
    return s;
  }
  // The deployment that served an unpinned (or pinned) chat request, or "status N".
  std::string Chat(http::Client& c, const std::string& model = "m") {
    auto r = c.Send("POST", "/v1/chat/completions", R"({"model":")" + model + R"(","messages":[]})");
    if (!r.ok()) return "transport error";
    if (r->status != 200) return "status " + std::to_string(r->status);
    const std::string* d = r->headers.Find("x-pagoda-deployment");
    return d ? *d : "no header";
  }

  std::string path_;
  std::unique_ptr<Gateway> gw_;
  std::unique_ptr<http::Client> admin_;
};

TEST_F(RolloutAdminTest, StartStatusAndTheirErrors) {
  Upstream a, b;
  StartGateway({{"v1", {a.url()}}, {"v2", {b.url()}}});
  EXPECT_EQ(Admin("POST", "/admin/rollouts", R"({"model":"m","version":"v2"})", "").status, 401);
  EXPECT_EQ(Admin("POST", "/admin/rollouts", R"({"model":"m","version":"v2"})", "wrong").status, 401);
  EXPECT_EQ(Admin("GET", "/admin/rollouts/m", "", "").status, 401);
  EXPECT_EQ(Admin("POST", "/admin/rollouts/m/abort", "", "").status, 401);
  EXPECT_EQ(Admin("GET", "/admin/rollouts/m").status, 404);  // none yet
  EXPECT_EQ(Admin("POST", "/admin/rollouts", "{not json").status, 400);
  EXPECT_EQ(Admin("POST", "/admin/rollouts", R"({"model":"m","version":"v2","steps":[50]})").status, 400);
  EXPECT_EQ(Admin("POST", "/admin/rollouts", R"({"model":"nope","version":"v2"})").status, 404);
  EXPECT_EQ(Admin("POST", "/admin/rollouts", R"({"model":"m","version":"v9"})").status, 404);
  EXPECT_EQ(Admin("POST", "/admin/rollouts", R"({"model":"m","version":"v1"})").status, 409);  // current
  auto started = Admin("POST", "/admin/rollouts",
                       R"({"model":"m","version":"v2","steps":[50,100],"step_interval_ms":60000})");
  ASSERT_EQ(started.status, 201) << started.body;
  EXPECT_EQ(json::parse(started.body)["state"], "checking_health");
  auto again = Admin("POST", "/admin/rollouts", R"({"model":"m","version":"v2"})");
  EXPECT_EQ(again.status, 409);
  EXPECT_NE(json::parse(again.body)["error"]["message"].get<std::string>().find("already running"),
            std::string::npos);
  EXPECT_EQ(Admin("GET", "/admin/rollouts/m/abort").status, 405);
  EXPECT_EQ(Admin("POST", "/admin/rollouts/m").status, 405);
  auto list = json::parse(Admin("GET", "/admin/rollouts").body);
  ASSERT_EQ(list["rollouts"].size(), 1u);
  EXPECT_EQ(list["rollouts"][0]["to_version"], "v2");
  // Wait for the first step, then abort: all back on v1.
  for (int i = 0; i < 200 && Status()["step"] != 1; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(Status()["weights"]["v2"], 50);
  auto aborted = Admin("POST", "/admin/rollouts/m/abort");
  ASSERT_EQ(aborted.status, 200) << aborted.body;
  EXPECT_EQ(json::parse(aborted.body)["state"], "aborted");
  EXPECT_EQ(Admin("POST", "/admin/rollouts/m/abort").status, 409);
  EXPECT_EQ(Admin("POST", "/admin/rollouts/nope/abort").status, 404);
  http::Client c("127.0.0.1", gw_->port());
  for (int i = 0; i < 20; ++i) EXPECT_EQ(Chat(c), "m@v1");
}

TEST_F(RolloutAdminTest, CompletedRolloutMovesUnpinnedTrafficAndKeepsPinned) {
  Upstream a, b;
  StartGateway({{"v1", {a.url()}}, {"v2", {b.url()}}});
  ASSERT_EQ(Admin("POST", "/admin/rollouts",
                  R"({"model":"m","version":"v2","steps":[50,100],"step_interval_ms":200,"probe_interval_ms":50})")
                .status,
            201);
  http::Client c("127.0.0.1", gw_->port());
  std::map<std::string, int> seen;
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < end && Status()["active"] == true) {
    ++seen[Chat(c)];
    EXPECT_EQ(Chat(c, "m@v1"), "m@v1");
  }
  const json s = WaitEnded();
  EXPECT_EQ(s["state"], "succeeded") << s.dump();
  EXPECT_EQ(s["current_version"], "v2");
  for (const auto& [k, n] : seen) EXPECT_TRUE(k == "m@v1" || k == "m@v2") << k;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Chat(c), "m@v2");
  EXPECT_EQ(Chat(c, "m@v1"), "m@v1");
  auto routing = json::parse(Admin("GET", "/admin/routing").body);
  EXPECT_EQ(routing["models"][0]["current_version"], "v2");
  auto metrics = c.Send("GET", "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->body.find("pagoda_gateway_rollout_state{model=\"m\"} 3"), std::string::npos);
}

TEST_F(RolloutAdminTest, UnreachableNewVersionRollsBackBeforeTrafficMoves) {
  Upstream a;
  StartGateway({{"v1", {a.url()}}, {"v3", {"http://127.0.0.1:" + std::to_string(DeadPort())}}});
  ASSERT_EQ(Admin("POST", "/admin/rollouts", R"({"model":"m","version":"v3","probe_interval_ms":50})").status, 201);
  http::Client c("127.0.0.1", gw_->port());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Chat(c), "m@v1");
  const json s = WaitEnded();
  EXPECT_EQ(s["state"], "rolled_back");
  EXPECT_EQ(s["step"], 0);
  EXPECT_NE(s["reason"].get<std::string>().find("v3-0"), std::string::npos) << s.dump();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Chat(c), "m@v1");
}

TEST_F(RolloutAdminTest, FailingNewVersionRollsBackWithoutFailingAClientRequest) {
  Upstream a, bad(500);
  StartGateway({{"v1", {a.url()}}, {"v2", {bad.url()}}});
  ASSERT_EQ(Admin("POST", "/admin/rollouts",
                  R"({"model":"m","version":"v2","steps":[50,100],"step_interval_ms":5000,"probe_interval_ms":50})")
                .status,
            201);
  http::Client c("127.0.0.1", gw_->port());
  int served = 0;
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < end && Status()["active"] == true) {
    EXPECT_EQ(Chat(c), "m@v1");  // a 500 from v2 is retried on v1
    ++served;
  }
  const json s = WaitEnded();
  EXPECT_EQ(s["state"], "rolled_back") << s.dump();
  EXPECT_NE(s["reason"].get<std::string>().find("error rate"), std::string::npos) << s.dump();
  EXPECT_GT(bad.calls.load(), 0);  // traffic did reach v2 before the rollback
  EXPECT_GT(served, 0);
  const int bad_calls = bad.calls.load();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Chat(c), "m@v1");
  EXPECT_EQ(bad.calls.load(), bad_calls);  // 100% old again
}

TEST_F(RolloutAdminTest, ReloadKeepsTheRolloutOrAbortsItWhenAVersionGoes) {
  Upstream a, b;
  StartGateway({{"v1", {a.url()}}, {"v2", {b.url()}}});
  ASSERT_EQ(Admin("POST", "/admin/rollouts",
                  R"({"model":"m","version":"v2","steps":[50,100],"step_interval_ms":60000,"probe_interval_ms":50})")
                .status,
            201);
  for (int i = 0; i < 200 && Status()["step"] != 1; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(Status()["step"], 1);
  ASSERT_EQ(Admin("POST", "/admin/reload").status, 200);  // same file: both versions stay
  EXPECT_EQ(Status()["state"], "progressing");
  EXPECT_EQ(json::parse(Admin("GET", "/admin/routing").body)["models"][0]["deployments"][1]["traffic_weight"], 50);
  std::ofstream(path_) << Toml({{"v1", {a.url()}}});
  ASSERT_EQ(Admin("POST", "/admin/reload").status, 200);
  const json s = Status();
  EXPECT_EQ(s["state"], "aborted");
  EXPECT_NE(s["reason"].get<std::string>().find("removed m@v2"), std::string::npos) << s.dump();
  http::Client c("127.0.0.1", gw_->port());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Chat(c), "m@v1");
}

}  // namespace
}  // namespace pagoda::gateway
