// AdminApi: the gateway's JSON admin endpoints under /admin/ on the main
// listener, behind the admin key (Authorization: Bearer, constant-time
// comparison; 401 without it; 403 when no admin key is configured, and over
// plain HTTP unless allow_insecure_keys):
//   GET  /admin/replicas   every replica and upstream with its live state
//   GET  /admin/routing    the routing table (models, deployments, traffic
//                          weights, aliases, upstreams) and the last reload
//   POST /admin/reload     re-reads the config file; 400 with the line and the
//                          problem when refused (the old config stays)
// The rollout endpoints (/admin/rollouts...) are in rollout_admin.h, the
// capacity schedule endpoints (/admin/schedules...) in schedule_admin.h.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "gateway/routing_table.h"
#include "http/router.h"

namespace pagoda::gateway {

class AdminBackend {
 public:
  virtual ~AdminBackend() = default;
  virtual std::shared_ptr<const RoutingTable> table() const = 0;
  virtual Status Reload() = 0;
  virtual std::string admin_key() const = 0;          // "" when none is configured
  virtual std::string last_reload_error() const = 0;  // "" when the last reload succeeded (or none ran)
};

// Adds the guard and the routes. `backend` must outlive the router.
void AddAdminRoutes(http::Router& router, AdminBackend* backend);

// GET /admin/replicas's body.
std::string ReplicasJson(const RoutingTable& table);
// One replica of it: id, url, deployment, health, circuit, load, role ...
nlohmann::json ReplicaJson(const Replica& replica, std::chrono::steady_clock::time_point now);

}  // namespace pagoda::gateway
