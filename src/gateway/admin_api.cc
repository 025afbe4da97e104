#include "gateway/admin_api.h"

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "control/control_plane.h"

namespace pagoda::gateway {

nlohmann::json ReplicaJson(const Replica& r, std::chrono::steady_clock::time_point now) {
  const ReplicaSnapshot s = r.state().Snapshot(now);
  return {{"id", r.id()},
          {"url", r.config().url},
          {"deployment", r.deployment()},
          {"model", r.model()},
          {"version", r.version()},
          {"zone", r.config().zone},
          {"weight", r.config().weight},
          {"external", r.external()},
          {"healthy", s.probe_healthy},
          {"circuit", CircuitStateName(s.circuit)},
          {"eligible", r.state().Eligible(now)},
          {"slow_start_ramp", s.ramp},
          {"active_requests", s.active_requests},
          {"active_blocks", s.active_blocks},
          {"consecutive_failures", s.consecutive_failures},
          {"ejections", s.ejections},
          {"kv_events", r.config().kv_events},
          {"role", ReplicaRoleName(r.config().role)},
          {"kv_transfer", r.config().kv_transfer}};
}

std::string ReplicasJson(const RoutingTable& table) {
  const auto now = std::chrono::steady_clock::now();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : table.AllReplicas()) out.push_back(ReplicaJson(*r, now));
  return nlohmann::json{{"replicas", out}}.dump();
}

void AddAdminRoutes(http::Router& router, AdminBackend* backend) {
  router.AddGuard("/admin/", [backend](const http::Request& req) -> std::optional<http::Response> {
    return control::RequireAdminKey(req, backend->admin_key(), backend->table()->config().allow_insecure_keys,
                                    "set [gateway] admin_key_env and that environment variable");
  });
  router.Add("GET", "/admin/replicas",
             http::SyncHandler([backend](const http::Request&) {
               return http::Response::Json(200, ReplicasJson(*backend->table()));
             }));
  router.Add("GET", "/admin/routing", http::SyncHandler([backend](const http::Request&) {
               nlohmann::json j = backend->table()->RoutingJson();
               const std::string err = backend->last_reload_error();
               j["last_reload"] = {{"ok", err.empty()}, {"error", err.empty() ? nlohmann::json(nullptr) : nlohmann::json(err)}};
               return http::Response::Json(200, j.dump());
             }));
  router.Add("POST", "/admin/reload", http::SyncHandler([backend](const http::Request&) {
               const Status st = backend->Reload();
               if (st.ok()) return http::Response::Json(200, R"({"reloaded":true})");
               api::ApiError e;
               e.status = 400;
               e.message = "Config reload refused (the previous config stays in force): " + st.message();
               e.code = "config_invalid";
               return http::Response::Json(400, e.ToJsonString());
             }));
}

}  // namespace pagoda::gateway
