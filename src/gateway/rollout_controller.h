// RolloutController: red-black rollouts of a model's new version, one per
// model at a time, as a small state machine over the routing table's traffic
// state (per-deployment weights + current version).
//
//   checking_health --(every new replica passes `health_passes` probes)--> progressing(step 1)
//   progressing(i)  --(step window passed, checks ok)--> progressing(i+1) ... --> succeeded
//   any active state --(a check fails)--> rolled_back      --(operator / reload)--> aborted
//
// While progressing, step i gives the new version steps[i]% of the unpinned
// traffic and the old one the rest (one SetTraffic swap); the window watches
// the new version: its replicas healthy (the controller's own probes, the
// gateway's probes, the circuit) and its error rate (failed / routed attempts
// counted by the gateway since the step began). A failing check, an abort or
// a reload that drops either version puts 100% back on the old version in
// one swap under the table's lock; requests in flight keep their replica. At
// the end the new version becomes the model's current version (unpinned
// requests follow it; the old stays reachable as model@old). Pinned requests
// never look at the weights.
//
// Reload rule (Adopt): a new table that keeps the model and both versions
// keeps the rollout and gets its traffic state; one that drops either aborts
// it (the model then follows the new config). A promoted version stays
// current across reloads until the config file's current_version for that
// model changes.
//
// Time is passed in (Tick(now)) so tests drive it with a fake clock; the
// gateway runs StartTicking(). Thread safety: every method from any thread;
// probe callbacks may arrive on any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "gateway/gateway_metrics.h"
#include "gateway/rollout_spec.h"
#include "gateway/routing_table.h"

namespace pagoda::gateway {

enum class RolloutState { kCheckingHealth, kProgressing, kSucceeded, kRolledBack, kAborted };
const char* RolloutStateName(RolloutState s);  // "checking_health", "progressing", ...
bool IsActive(RolloutState s);                 // checking_health or progressing

struct RolloutCheck {
  std::string name;      // "health" or "error_rate"
  bool ok = true;
  double value = 0;      // health: new replicas passing; error_rate: failed / routed in the window
  double threshold = 0;  // health: replicas required; error_rate: max_error_rate
  std::string detail;    // e.g. "3 failed of 40 routed", or the failing replica
};

struct RolloutStatus {
  RolloutSpec spec;
  std::string from_version;
  RolloutState state = RolloutState::kCheckingHealth;
  size_t step = 0;       // 1-based index into spec.steps; 0 before traffic moves
  double percent = 0;    // the new version's share of unpinned traffic now
  std::map<std::string, double> weights;  // the model's live traffic weights
  std::string current_version;            // the model's live current version
  std::vector<RolloutCheck> checks;
  std::string reason;                     // why it rolled back or was aborted
  int64_t elapsed_ms = 0;                 // since it started (to its end once ended)
  int64_t step_elapsed_ms = 0;
  nlohmann::json ToJson() const;
};

class RolloutController {
 public:
  using Clock = std::chrono::steady_clock;
  // Probes `replica`'s health; `done(ok)` once, from any thread, possibly
  // before Probe returns.
  using ProbeFn = std::function<void(std::shared_ptr<const Replica> replica, std::function<void(bool ok)> done)>;
  // The gateway's cumulative attempt counts for a deployment ("model@version").
  using CountsFn = std::function<DeploymentCounts(const std::string& deployment)>;

  RolloutController(std::shared_ptr<RoutingTable> table, ProbeFn probe, CountsFn counts);
  ~RolloutController();  // StopTicking()

  // Errors: bad spec (InvalidArgument), unknown model or version (NotFound),
  // a rollout of the model already running, the version already current, a
  // version without replicas or an external one (FailedPrecondition).
  Result<RolloutStatus> Start(RolloutSpec spec, Clock::time_point now);
  // Atomic rollback to 100% old. Errors: no rollout of the model (NotFound),
  // it already ended (FailedPrecondition).
  Result<RolloutStatus> Abort(std::string_view model, const std::string& reason, Clock::time_point now);
  // The running rollout of `model`, else the last one to end; nullopt: none.
  std::optional<RolloutStatus> Get(std::string_view model, Clock::time_point now) const;
  std::vector<RolloutStatus> All(Clock::time_point now) const;

  // Issues due probes and advances every running rollout.
  void Tick(Clock::time_point now);
  // A config reload: `table` replaces the one the controller drives (the
  // reload rule above). Call before the gateway installs it.
  void Adopt(std::shared_ptr<RoutingTable> table, Clock::time_point now);

  // Prometheus text: state, step and new-version percent per model, rollbacks.
  std::string RenderMetrics() const;

  // A thread that calls Tick(Clock::now()) every `interval`.
  void StartTicking(std::chrono::milliseconds interval);
  void StopTicking();

 private:
  struct ProbeRecord {
    int passes = 0;    // in a row
    int failures = 0;  // in a row
  };
  struct Rollout {
    uint64_t id = 0;
    RolloutSpec spec;
    std::string from;
    RolloutState state = RolloutState::kCheckingHealth;
    size_t step = 0;
    Clock::time_point started, step_started, ended, next_probe;
    DeploymentCounts baseline;  // the new version's counts when the step began
    std::map<std::string, ProbeRecord> probes;  // by replica id
    std::vector<RolloutCheck> checks;
    std::string reason;
  };
  // A version a rollout made current, held across reloads while the config
  // file's current_version (as last seen) stays the same.
  struct Promotion {
    std::string version;
    std::string config_current;
  };
  using Probes = std::vector<std::pair<uint64_t, std::shared_ptr<const Replica>>>;

  // All with mu_ held.
  void Advance(Rollout& r, const Deployment& to, Clock::time_point now);
  void CheckHealthBeforeTraffic(Rollout& r, const Deployment& to, Clock::time_point now);
  void WatchStep(Rollout& r, const Deployment& to, Clock::time_point now);
  void EnterStep(Rollout& r, size_t step, Clock::time_point now);
  void ApplyTraffic(const Rollout& r);
  void End(Rollout& r, RolloutState state, std::string reason, Clock::time_point now, bool restore = true);
  RolloutStatus StatusOf(const Rollout& r, Clock::time_point now) const;
  void OnProbe(uint64_t id, const std::string& replica, bool ok);
  void RunProbes(Probes probes);  // without mu_

  ProbeFn probe_;
  CountsFn counts_;
  mutable std::mutex mu_;
  std::shared_ptr<RoutingTable> table_;       // guarded by mu_
  std::map<std::string, Rollout> rollouts_;   // guarded by mu_: by model, the running or last one
  std::map<std::string, Promotion> promoted_;  // guarded by mu_: by model
  std::map<std::string, uint64_t> rollbacks_;  // guarded by mu_: automatic rollbacks by model
  uint64_t next_id_ = 0;                      // guarded by mu_

  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  bool stop_ = false;  // guarded by tick_mu_
  std::thread ticker_;
};

}  // namespace pagoda::gateway
