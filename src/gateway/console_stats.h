// The console's live figures for `pagoda gateway`: GET /console/api/stats as
// JSON (docs/CONSOLE.md, "JSON endpoints"), what the dashboard polls each
// second. Per replica: its state (health, circuit, load: admin_api.h's
// ReplicaJson), the gateway's routing of it (requests by status class,
// upstream errors, predicted vs reported cached tokens) and the replica's own
// engine figures, fetched from its /console/api/stats (at most
// kReplicaStatsTimeout; "engine_error" says why one is missing); and the
// rollouts. With the control plane on, the caller's API key is checked as
// for /v1/models, and only the replicas of models the key may see are listed.
// Ids and counts only: no prompt, output or key.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "control/control_plane.h"
#include "gateway/gateway_metrics.h"
#include "gateway/rollout_controller.h"
#include "gateway/routing_table.h"
#include "http/router.h"
#include "http/upstream_client.h"

namespace pagoda::gateway {

inline constexpr std::chrono::milliseconds kReplicaStatsTimeout{800};

// What the route reads; every pointer must outlive the router.
struct ConsoleStatsSources {
  std::function<std::shared_ptr<const RoutingTable>()> table;
  const GatewayMetrics* metrics = nullptr;
  const RolloutController* rollouts = nullptr;
  http::UpstreamClient* client = nullptr;
  control::ControlPlane* control = nullptr;  // null: an open gateway
};

void AddConsoleStatsRoute(http::Router& router, ConsoleStatsSources sources);

}  // namespace pagoda::gateway
