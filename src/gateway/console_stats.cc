#include "gateway/console_stats.h"

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/admin_api.h"
#include "gateway/health_probe.h"
#include "gateway/tenant_routing.h"

namespace pagoda::gateway {
namespace {

using ReplicaList = std::vector<std::shared_ptr<const Replica>>;

// The replicas' answers, gathered from the client's threads; the last one to
// arrive responds.
struct Gather {
  std::mutex mu;
  size_t pending = 0;
  std::vector<nlohmann::json> engines;  // null until answered
  std::vector<std::string> errors;      // "" when answered
  ReplicaList replicas;
  ConsoleStatsSources sources;
  std::shared_ptr<http::ResponseWriter> writer;
};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Respond(Gather& g) {
  const auto now = std::chrono::steady_clock::now();
  const auto traffic = g.sources.metrics->TrafficByReplica();
  nlohmann::json replicas = nlohmann::json::array();
  for (size_t i = 0; i < g.replicas.size(); ++i) {
    const Replica& r = *g.replicas[i];
    nlohmann::json j = ReplicaJson(r, now);
    j.erase("url");  // an internal address: not for tenants
    const auto t = traffic.find(r.id());
    const GatewayMetrics::ReplicaTraffic tr = t != traffic.end() ? t->second : GatewayMetrics::ReplicaTraffic{};
    j["requests"] = tr.requests;
    j["upstream_errors"] = tr.upstream_errors;
    j["cached_tokens"] = {{"predicted", tr.cached_predicted},
                          {"reported", tr.cached_reported},
                          {"prompt", tr.prompt_tokens},
                          {"responses", tr.responses}};
    j["engine"] = g.engines[i];
    if (!g.errors[i].empty()) j["engine_error"] = g.errors[i];
    replicas.push_back(std::move(j));
  }
  nlohmann::json rollouts = nlohmann::json::array();
  for (const RolloutStatus& s : g.sources.rollouts->All(RolloutController::Clock::now())) rollouts.push_back(s.ToJson());
  nlohmann::json route_errors = nlohmann::json::object();
  for (const auto& [status, n] : g.sources.metrics->RouteErrors()) route_errors[std::to_string(status)] = n;
  http::Response resp = http::Response::Json(200, nlohmann::json{{"kind", "gateway"},
                                                                  {"time_ms", NowMs()},
                                                                  {"replicas", std::move(replicas)},
                                                                  {"rollouts", std::move(rollouts)},
                                                                  {"route_errors", std::move(route_errors)}}
                                                        .dump());
  resp.headers.Set("Cache-Control", "no-store");
  g.writer->Respond(std::move(resp));
}

// Replica `i` answered (engine set) or failed (error set).
void Settle(const std::shared_ptr<Gather>& g, size_t i, nlohmann::json engine, std::string error) {
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    g->engines[i] = std::move(engine);
    g->errors[i] = std::move(error);
    last = --g->pending == 0;
  }
  if (last) Respond(*g);
}

void FetchEngine(const std::shared_ptr<Gather>& g, size_t i) {
  http::UpstreamRequest req = ReplicaGet(*g->replicas[i], "/console/api/stats", kReplicaStatsTimeout);
  struct Reply {
    int status = 0;
    std::string body;
  };
  auto reply = std::make_shared<Reply>();
  http::UpstreamEvents ev;
  ev.on_head = [reply](const http::UpstreamResponseHead& h) { reply->status = h.status; };
  ev.on_body = [reply](std::string_view bytes) {
    if (reply->body.size() < (1u << 20)) reply->body.append(bytes);
  };
  ev.on_done = [g, i, reply](const http::UpstreamOutcome& o) {
    if (o.error != http::UpstreamError::kNone) return Settle(g, i, nullptr, "unreachable: " + o.message);
    if (reply->status != 200) return Settle(g, i, nullptr, "HTTP " + std::to_string(reply->status));
    nlohmann::json j = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("engine") || !j["engine"].is_object()) {
      return Settle(g, i, nullptr, "no engine figures");
    }
    Settle(g, i, std::move(j["engine"]), "");
  };
  g->sources.client->Start(std::move(req), std::move(ev));
}

}  // namespace

void AddConsoleStatsRoute(http::Router& router, ConsoleStatsSources sources) {
  router.Add("GET", "/console/api/stats",
             http::Handler([sources](const http::Request& req, std::shared_ptr<http::ResponseWriter> w) {
               const auto table = sources.table();
               std::optional<control::Caller> caller;
               if (sources.control != nullptr) {
                 auto who = sources.control->Authenticate(req, "");
                 if (auto* refused = std::get_if<http::Response>(&who)) {
                   w->Respond(std::move(*refused));
                   return;
                 }
                 caller = std::move(std::get<control::Caller>(who));
               }
               auto g = std::make_shared<Gather>();
               for (const auto& r : table->AllReplicas()) {
                 if (caller && !VisibleTo(*table, r->model(), *caller)) continue;
                 g->replicas.push_back(r);
               }
               g->sources = sources;
               g->writer = std::move(w);
               g->engines.assign(g->replicas.size(), nullptr);
               g->errors.assign(g->replicas.size(), "");
               std::vector<size_t> fetch;
               for (size_t i = 0; i < g->replicas.size(); ++i) {
                 if (g->replicas[i]->external()) {
                   g->errors[i] = "external upstream";
                 } else {
                   fetch.push_back(i);
                 }
               }
               g->pending = fetch.size();
               if (fetch.empty()) return Respond(*g);
               for (size_t i : fetch) FetchEngine(g, i);
             }));
}

}  // namespace pagoda::gateway
