// Gateway: the `pagoda gateway` process as an object. Loads the config,
// builds the routing table, serves the OpenAI endpoints (proxied), /v1/models,
// /health, /metrics and the admin API on one http::Server (https with
// [gateway] tls_cert / tls_key), runs the active health checker and the
// rollout controller, and reloads the config (and the TLS certificate) on
// SIGHUP or POST /admin/reload (a config or certificate that does not load is
// refused; the old one stays, and requests in flight keep the table and
// replicas they were routed with).
// Thread safety: Start/Shutdown/RunUntilSignal from one controlling thread;
// Reload and table() from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "batch/batch_service.h"
#include "control/control_plane.h"
#include "gateway/admin_api.h"
#include "gateway/capacity_scheduler.h"
#include "gateway/gateway_metrics.h"
#include "gateway/health_checker.h"
#include "gateway/kv_event_feed.h"
#include "gateway/replica_hours_meter.h"
#include "gateway/rollout_controller.h"
#include "gateway/routing_table.h"
#include "http/server.h"
#include "http/upstream_client.h"

namespace pagoda::gateway {

struct GatewayOptions {
  std::string config_path;
  std::string listen_override;  // "HOST:PORT"; "" keeps the config's
  // Both or neither: the listener's certificate and key instead of the
  // config's tls_cert / tls_key (reloads reread these files).
  std::string tls_cert_override;
  std::string tls_key_override;
  EnvLookup env = ProcessEnv();
  bool health_checks = true;
  WallClock wall_clock = SystemWallClock();  // capacity schedules' time (tests: a fake clock)
  // The Files and Batch APIs (docs/BATCH.md) when set (`--data-dir`): file
  // contents there, batch state in [control]'s store or else DIR/batch.db.
  // Lines are spread over the replicas by the gateway's own routing.
  std::string batch_data_dir;
  batch::BatchOptions batch;
};

class Gateway final : public AdminBackend {
 public:
  // Errors: the config does not load (with its line), the listen or TLS override is bad.
  static Result<std::unique_ptr<Gateway>> Create(GatewayOptions options);
  ~Gateway() override;

  Status Start();
  uint16_t port() const;
  void Shutdown(std::chrono::milliseconds deadline);
  // Serves until SIGINT/SIGTERM; SIGHUP reloads the config meanwhile.
  void RunUntilSignal(std::chrono::milliseconds deadline);

  // AdminBackend.
  std::shared_ptr<const RoutingTable> table() const override;
  Status Reload() override;
  std::string admin_key() const override;
  std::string last_reload_error() const override;

  GatewayMetrics& metrics() { return metrics_; }
  HealthChecker& health_checker() { return *health_; }
  KvEventFeed& kv_event_feed() { return *feed_; }
  RolloutController& rollouts() { return *rollouts_; }
  CapacityScheduler& schedules() { return *schedules_; }
  http::UpstreamClient& upstream_client() { return *client_; }
  http::ServerStats server_stats() const { return server_->stats(); }
  control::ControlPlane* control() { return control_.get(); }  // null without [control]

 private:
  explicit Gateway(GatewayOptions options) : options_(std::move(options)) {}
  http::Router BuildRouter();
  // The batch service over a copy of `router` (its routes so far), and the
  // Files and Batch routes added to it.
  Status AddBatch(http::Router& router);
  void Install(std::shared_ptr<RoutingTable> table);
  http::TlsFiles ListenerTls(const GatewayConfig& config) const;  // the overrides, else the config's

  GatewayOptions options_;
  GatewayMetrics metrics_;
  std::unique_ptr<RolloutController> rollouts_;  // destroyed after client_ (its probes' callbacks)
  std::unique_ptr<http::UpstreamClient> client_;
  std::unique_ptr<HealthChecker> health_;
  std::unique_ptr<KvEventFeed> feed_;  // the replicas' KV events into each model's index
  std::unique_ptr<control::ControlPlane> control_;  // [control]; null for an open gateway
  std::unique_ptr<ReplicaHoursMeter> replica_hours_;  // with control_: dedicated deployments
  std::unique_ptr<CapacityScheduler> schedules_;      // replicas' pools (capacity schedules)
  std::unique_ptr<http::Server> server_;
  std::unique_ptr<batch::BatchService> batch_;  // --data-dir; stopped and destroyed first
  mutable std::mutex mu_;
  std::shared_ptr<RoutingTable> table_;  // guarded by mu_
  std::string admin_key_;                // guarded by mu_
  std::string last_reload_error_;        // guarded by mu_
  std::mutex reload_mu_;                 // one reload at a time
};

}  // namespace pagoda::gateway
