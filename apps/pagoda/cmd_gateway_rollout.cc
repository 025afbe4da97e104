// pagoda gateway rollout start|status|abort: a thin client of a running
// gateway's /admin/rollouts API (docs/GATEWAY.md, "Rollouts"). Prints the
// rollout's status as JSON on stdout. Exit codes: 0 ok, 1 error (connection,
// refused call), 2 usage, 3 with --wait: the rollout ended rolled back or
// aborted.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "commands.h"
#include "gateway/gateway_config.h"
#include "http/client.h"

namespace pagoda::cli {
namespace {

constexpr int kRolloutFailed = 3;

struct RolloutArgs {
  std::string action, admin, key_env = "PAGODA_GATEWAY_ADMIN_KEY", model, version;
  std::vector<double> steps;
  int64_t step_interval_ms = 0;
  double max_error_rate = -1;
  bool wait = false;
  int wait_timeout_s = 3600;
};

// One admin call; the body on 2xx, else an error naming the status and the gateway's message.
Result<nlohmann::json> Call(http::Client& client, const std::string& key, const std::string& method,
                            const std::string& target, const std::string& body = "") {
  http::Headers h;
  h.Add("Authorization", "Bearer " + key);
  auto r = client.Send(method, target, body, h);
  if (!r.ok()) return IoError("cannot reach the gateway's admin API: " + r.status().message());
  const auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (r->status / 100 != 2) {
    std::string msg = r->body.substr(0, 300);
    if (j.is_object() && j.contains("error") && j["error"].is_object() && j["error"].contains("message")) {
      msg = j["error"]["message"].get<std::string>();
    }
    return InvalidArgument(method + " " + target + ": HTTP " + std::to_string(r->status) + ": " + msg);
  }
  if (j.is_discarded()) return Internal(method + " " + target + ": the answer is not JSON");
  return j;
}

std::string Summary(const nlohmann::json& s) {
  std::string line = s.value("model", "") + " " + s.value("from_version", "") + " -> " + s.value("to_version", "") +
                     ": " + s.value("state", "");
  if (s.value("step", 0) > 0) {
    char pct[32];
    std::snprintf(pct, sizeof(pct), "%g", s.value("percent", 0.0));
    line += " step " + std::to_string(s.value("step", 0)) + "/" + std::to_string(s["steps"].size()) + " (" + pct +
            "%)";
  }
  if (s.contains("reason") && s["reason"].is_string()) line += ": " + s["reason"].get<std::string>();
  return line;
}

// Polls until the rollout ends; prints each change on stderr.
int Follow(http::Client& client, const RolloutArgs& a, const std::string& key, nlohmann::json status) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(a.wait_timeout_s);
  std::string last;
  while (status.value("active", false)) {
    if (const std::string s = Summary(status); s != last) {
      std::fprintf(stderr, "%s\n", s.c_str());
      last = s;
    }
    if (std::chrono::steady_clock::now() >= end) return Fail("--wait: the rollout is still running: " + last);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto next = Call(client, key, "GET", "/admin/rollouts/" + a.model);
    if (!next.ok()) return Fail(next.status());
    status = std::move(next).value();
  }
  std::fprintf(stderr, "%s\n", Summary(status).c_str());
  std::printf("%s\n", status.dump(2).c_str());
  return status.value("state", "") == "succeeded" ? 0 : kRolloutFailed;
}

int Run(const RolloutArgs& a) {
  auto endpoint = gateway::ParseEndpoint(a.admin);
  if (!endpoint.ok()) return Fail("--admin: " + endpoint.status().message());
  if (endpoint->scheme != "http") return Fail("--admin: only http:// is supported");
  const char* key = std::getenv(a.key_env.c_str());
  if (key == nullptr || *key == '\0') return Fail("--admin-key-env: environment variable " + a.key_env + " is not set");
  if ((a.action == "start" || a.action == "abort") && a.model.empty()) return Fail(a.action + " needs --model");
  if (a.action == "start" && a.version.empty()) return Fail("start needs --version");
  http::Client client(endpoint->host, endpoint->port, std::chrono::seconds(10));
  const std::string base = endpoint->base_path + "/admin/rollouts";
  Result<nlohmann::json> r = Internal("unreachable");
  if (a.action == "start") {
    nlohmann::json body = {{"model", a.model}, {"version", a.version}};
    if (!a.steps.empty()) body["steps"] = a.steps;
    if (a.step_interval_ms > 0) body["step_interval_ms"] = a.step_interval_ms;
    if (a.max_error_rate >= 0) body["max_error_rate"] = a.max_error_rate;
    r = Call(client, key, "POST", base, body.dump());
  } else if (a.action == "abort") {
    r = Call(client, key, "POST", base + "/" + a.model + "/abort");
  } else {
    r = Call(client, key, "GET", a.model.empty() ? base : base + "/" + a.model);
  }
  if (!r.ok()) return Fail(r.status());
  if (a.wait && !a.model.empty() && a.action != "abort") return Follow(client, a, key, std::move(r).value());
  std::printf("%s\n", r->dump(2).c_str());
  return 0;
}

}  // namespace

int CmdGatewayRollout(int argc, char** argv) {
  CLI::App app("Start, follow or abort a red-black rollout on a running gateway (its admin API)", "gateway rollout");
  RolloutArgs a;
  app.add_option("action", a.action, "start | status | abort")
      ->required()
      ->check(CLI::IsMember({"start", "status", "abort"}));
  app.add_option("--admin", a.admin, "the gateway's base URL, http://HOST:PORT")->required();
  app.add_option("--admin-key-env", a.key_env, "environment variable holding the admin key")->capture_default_str();
  app.add_option("--model", a.model, "model name (status without it lists every rollout)");
  app.add_option("--version", a.version, "start: the new version");
  app.add_option("--steps", a.steps, "start: percent of unpinned traffic per step, e.g. 10,50,100")->delimiter(',');
  app.add_option("--step-interval-ms", a.step_interval_ms, "start: how long each step is watched")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
  app.add_option("--max-error-rate", a.max_error_rate, "start: failed / routed share that rolls back")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--wait", a.wait, "start/status: follow until the rollout ends (exit 3 unless it succeeded)");
  app.add_option("--wait-timeout-s", a.wait_timeout_s, "give up waiting after this long")
      ->check(CLI::Range(1, 86'400));
  if (int rc = ParseArgs(app, argc, argv); rc >= 0) return rc;
  return Run(a);
}

}  // namespace pagoda::cli
