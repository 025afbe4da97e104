// CapacityScheduler: the capacity schedule of each deployment (the config's,
// replaced or removed through the admin API until the next reload) and their
// application: it sets every replica's pool (ReplicaState::pool) from its
// deployment's schedule at the clock's time, on a timer and at once on every
// change. The router reads the pool only when it picks a replica, so a move
// steers later requests; requests and streams in flight run on where they are.
// Time comes from an injected WallClock (tests drive a fake one).
// Thread safety: every method from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "gateway/capacity_schedule.h"
#include "gateway/routing_table.h"

namespace pagoda::gateway {

using WallClock = std::function<std::chrono::system_clock::time_point()>;
WallClock SystemWallClock();

class CapacityScheduler {
 public:
  explicit CapacityScheduler(WallClock clock);
  ~CapacityScheduler();
  CapacityScheduler(const CapacityScheduler&) = delete;
  CapacityScheduler& operator=(const CapacityScheduler&) = delete;

  // Schedules `table` from now on: its config's schedules replace all others
  // (admin changes too), and its replicas' pools are set before this returns
  // (call it before the table serves).
  void Adopt(std::shared_ptr<const RoutingTable> table);
  // Replaces (or adds) a deployment's schedule until the next Adopt; applied
  // at once. Errors: NotFound (no such model or version), InvalidArgument
  // (the schedule does not bind to the deployment's replicas).
  Status Set(std::string_view model, std::string_view version, CapacitySchedule schedule);
  // Removes a deployment's schedule (its replicas go to the shared pool)
  // until the next Adopt. Errors: NotFound (no such deployment, or no schedule).
  Status Remove(std::string_view model, std::string_view version);
  // Sets every replica's pool for the clock's time now.
  void Apply();

  // Apply() every `period` on a thread of its own until StopTicking.
  void StartTicking(std::chrono::milliseconds period);
  void StopTicking();

  // GET /admin/schedules: {"now", "schedules": [entry per deployment]}; an
  // entry: {model, version, deployment, source ("config" | "admin" | null),
  // schedule (ScheduleToJson or null), replicas: [{id, url, pool, next_pool,
  // next_change}]} (pool: the one routing uses now; next_change: RFC 3339 in
  // the schedule's offset, null when it never changes).
  nlohmann::json ToJson() const;
  // One deployment's entry; nullopt when there is no such deployment.
  std::optional<nlohmann::json> DeploymentJson(std::string_view model, std::string_view version) const;

 private:
  struct Entry {
    BoundSchedule bound;
    std::string source;  // "config" | "admin"
  };
  void ApplyLocked(std::chrono::system_clock::time_point now);  // mu_ held
  nlohmann::json EntryJson(const ModelRoute& model, const Deployment& dep,
                           std::chrono::system_clock::time_point now) const;  // mu_ held
  const Deployment* FindLocked(std::string_view model, std::string_view version) const;  // mu_ held

  const WallClock clock_;
  mutable std::mutex mu_;
  std::shared_ptr<const RoutingTable> table_;  // guarded by mu_
  std::map<std::string, Entry> schedules_;     // guarded by mu_: "model@version" -> schedule

  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  bool stop_ = false;  // guarded by tick_mu_
  std::thread ticker_;
};

}  // namespace pagoda::gateway
