#include "gateway/rollout_controller.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "base/log.h"

namespace pagoda::gateway {
namespace {

int64_t Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

std::string Percent(double rate) {
  std::ostringstream o;
  o.precision(3);
  o << rate * 100 << "%";
  return o.str();
}

}  // namespace

const char* RolloutStateName(RolloutState s) {
  switch (s) {
    case RolloutState::kCheckingHealth: return "checking_health";
    case RolloutState::kProgressing: return "progressing";
    case RolloutState::kSucceeded: return "succeeded";
    case RolloutState::kRolledBack: return "rolled_back";
    case RolloutState::kAborted: return "aborted";
  }
  return "unknown";
}

bool IsActive(RolloutState s) { return s == RolloutState::kCheckingHealth || s == RolloutState::kProgressing; }

nlohmann::json RolloutStatus::ToJson() const {
  nlohmann::json checks_j = nlohmann::json::array();
  for (const RolloutCheck& c : checks) {
    checks_j.push_back(
        {{"name", c.name}, {"ok", c.ok}, {"value", c.value}, {"threshold", c.threshold}, {"detail", c.detail}});
  }
  return {{"model", spec.model},
          {"from_version", from_version},
          {"to_version", spec.version},
          {"state", RolloutStateName(state)},
          {"active", IsActive(state)},
          {"step", step},
          {"steps", spec.steps},
          {"percent", percent},
          {"weights", weights},
          {"current_version", current_version},
          {"checks", checks_j},
          {"reason", reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(reason)},
          {"elapsed_ms", elapsed_ms},
          {"step_elapsed_ms", step_elapsed_ms},
          {"step_interval_ms", spec.step_interval.count()},
          {"max_error_rate", spec.max_error_rate}};
}

RolloutController::RolloutController(std::shared_ptr<RoutingTable> table, ProbeFn probe, CountsFn counts)
    : probe_(std::move(probe)), counts_(std::move(counts)), table_(std::move(table)) {}

RolloutController::~RolloutController() { StopTicking(); }

Result<RolloutStatus> RolloutController::Start(RolloutSpec spec, Clock::time_point now) {
  PAGODA_RETURN_IF_ERROR(ValidateRolloutSpec(spec));
  std::lock_guard<std::mutex> lock(mu_);
  const ModelRoute* model = table_->FindModel(spec.model);
  if (model == nullptr) return NotFound("unknown model '" + spec.model + "'");
  const Deployment* to = model->FindDeployment(spec.version);
  if (to == nullptr) return NotFound("model '" + spec.model + "' has no version '" + spec.version + "'");
  if (to->replicas.empty()) return FailedPrecondition("version '" + spec.version + "' has no replicas");
  for (const auto& r : to->replicas) {
    if (r->external()) return FailedPrecondition("version '" + spec.version + "' has an external replica");
  }
  if (auto it = rollouts_.find(spec.model); it != rollouts_.end() && IsActive(it->second.state)) {
    return FailedPrecondition("a rollout of '" + spec.model + "' is already running (" + it->second.from + " -> " +
                              it->second.spec.version + "); abort it first");
  }
  const std::string from = table_->CurrentVersion(spec.model);
  if (from == spec.version) return FailedPrecondition("'" + spec.version + "' is already the current version");
  Rollout r;
  r.id = ++next_id_;
  r.spec = std::move(spec);
  r.from = from;
  r.started = r.step_started = r.next_probe = now;
  PAGODA_LOG(Info) << "gateway: rollout of " << r.spec.model << " " << r.from << " -> " << r.spec.version
                   << " started (checking the new version's health)";
  auto& slot = rollouts_[r.spec.model];
  slot = std::move(r);
  return StatusOf(slot, now);
}

Result<RolloutStatus> RolloutController::Abort(std::string_view model, const std::string& reason,
                                               Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = rollouts_.find(std::string(model));
  if (it == rollouts_.end()) return NotFound("no rollout of '" + std::string(model) + "'");
  if (!IsActive(it->second.state)) {
    return FailedPrecondition("the rollout of '" + std::string(model) + "' already ended (" +
                              RolloutStateName(it->second.state) + ")");
  }
  End(it->second, RolloutState::kAborted, reason, now);
  return StatusOf(it->second, now);
}

std::optional<RolloutStatus> RolloutController::Get(std::string_view model, Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = rollouts_.find(std::string(model));
  if (it == rollouts_.end()) return std::nullopt;
  return StatusOf(it->second, now);
}

std::vector<RolloutStatus> RolloutController::All(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RolloutStatus> out;
  for (const auto& [model, r] : rollouts_) out.push_back(StatusOf(r, now));
  return out;
}

void RolloutController::Tick(Clock::time_point now) {
  Probes due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, r] : rollouts_) {
      const ModelRoute* model = table_->FindModel(name);
      const Deployment* to = model != nullptr ? model->FindDeployment(r.spec.version) : nullptr;
      if (!IsActive(r.state) || to == nullptr || now < r.next_probe) continue;
      for (const auto& rep : to->replicas) due.emplace_back(r.id, rep);
      r.next_probe = now + r.spec.probe_interval;
    }
  }
  RunProbes(std::move(due));  // answers that come at once count in this tick
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, r] : rollouts_) {
    if (!IsActive(r.state)) continue;
    const ModelRoute* model = table_->FindModel(name);
    const Deployment* to = model != nullptr ? model->FindDeployment(r.spec.version) : nullptr;
    if (to == nullptr) {  // Adopt aborts these first; kept as a guard
      End(r, RolloutState::kAborted, "the new version is gone from the routing table", now);
      continue;
    }
    Advance(r, *to, now);
  }
}

void RolloutController::RunProbes(Probes probes) {
  for (auto& [id, replica] : probes) {
    const std::string rid = replica->id();
    probe_(std::move(replica), [this, id = id, rid](bool ok) { OnProbe(id, rid, ok); });
  }
}

void RolloutController::OnProbe(uint64_t id, const std::string& replica, bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, r] : rollouts_) {
    if (r.id != id || !IsActive(r.state)) continue;
    ProbeRecord& p = r.probes[replica];
    if (ok) {
      ++p.passes;
      p.failures = 0;
    } else {
      ++p.failures;
      p.passes = 0;
    }
  }
}

void RolloutController::Advance(Rollout& r, const Deployment& to, Clock::time_point now) {
  if (r.state == RolloutState::kCheckingHealth) {
    CheckHealthBeforeTraffic(r, to, now);
  } else {
    WatchStep(r, to, now);
  }
}

void RolloutController::CheckHealthBeforeTraffic(Rollout& r, const Deployment& to, Clock::time_point now) {
  size_t passing = 0;
  std::string failing;
  for (const auto& rep : to.replicas) {
    const ProbeRecord& p = r.probes[rep->id()];
    if (p.passes >= r.spec.health_passes) ++passing;
    if (p.failures >= r.spec.max_probe_failures && failing.empty()) failing = rep->id();
  }
  RolloutCheck health{"health", failing.empty(), static_cast<double>(passing),
                      static_cast<double>(to.replicas.size()),
                      failing.empty() ? "" : "replica " + failing + " failed its health probes"};
  r.checks = {health};
  if (!failing.empty()) {
    return End(r, RolloutState::kRolledBack,
               "replica " + failing + " of " + r.spec.version + " failed " +
                   std::to_string(r.spec.max_probe_failures) + " health probe(s) in a row before any traffic moved",
               now);
  }
  if (passing == to.replicas.size()) return EnterStep(r, 1, now);
  if (now - r.started >= r.spec.health_timeout) {
    End(r, RolloutState::kRolledBack,
        "the new version's replicas did not pass health within " + std::to_string(r.spec.health_timeout.count()) +
            " ms (" + std::to_string(passing) + " of " + std::to_string(to.replicas.size()) + " passing)",
        now);
  }
}

void RolloutController::WatchStep(Rollout& r, const Deployment& to, Clock::time_point now) {
  size_t healthy = 0;
  std::string sick, why;
  for (const auto& rep : to.replicas) {
    const ReplicaSnapshot s = rep->state().Snapshot(now);
    const ProbeRecord& p = r.probes[rep->id()];
    std::string w;
    if (p.failures >= r.spec.max_probe_failures) {
      w = "failed " + std::to_string(p.failures) + " health probe(s) in a row";
    } else if (!s.probe_healthy) {
      w = "is ejected by the gateway's health checks";
    } else if (s.circuit == CircuitBreaker::State::kOpen) {
      w = "has its circuit open after failed requests";
    }
    if (w.empty()) {
      ++healthy;
    } else if (sick.empty()) {
      sick = rep->id();
      why = std::move(w);
    }
  }
  const DeploymentCounts c = counts_(to.key);
  const uint64_t routed = c.requests - std::min(c.requests, r.baseline.requests);
  const uint64_t failed = c.failures - std::min(c.failures, r.baseline.failures);
  const double rate = routed > 0 ? static_cast<double>(failed) / static_cast<double>(routed) : 0.0;
  r.checks = {
      RolloutCheck{"health", sick.empty(), static_cast<double>(healthy), static_cast<double>(to.replicas.size()),
                   sick.empty() ? "" : "replica " + sick + " " + why},
      RolloutCheck{"error_rate", rate <= r.spec.max_error_rate, rate, r.spec.max_error_rate,
                   std::to_string(failed) + " failed of " + std::to_string(routed) + " routed"}};
  // Every failing check is named: a replica whose circuit opened on failed
  // requests usually fails the error-rate check in the same tick too.
  std::string reason;
  if (!sick.empty()) reason = "health check failed at step " + std::to_string(r.step) + ": replica " + sick + " " + why;
  if (rate > r.spec.max_error_rate) {
    if (!reason.empty()) reason += "; ";
    reason += "error rate " + Percent(rate) + " (" + std::to_string(failed) + " of " + std::to_string(routed) +
              ") above " + Percent(r.spec.max_error_rate) + " at step " + std::to_string(r.step);
  }
  if (!reason.empty()) return End(r, RolloutState::kRolledBack, std::move(reason), now);
  if (now - r.step_started < r.spec.step_interval) return;
  if (r.step < r.spec.steps.size()) return EnterStep(r, r.step + 1, now);
  // The last step (100%) held for its window: the new version becomes current.
  if (Status st = table_->SetTraffic(r.spec.model, {}, r.spec.version); !st.ok()) {
    return End(r, RolloutState::kAborted, "promotion failed: " + st.message(), now);
  }
  r.state = RolloutState::kSucceeded;
  r.ended = now;
  promoted_[r.spec.model] = Promotion{r.spec.version, table_->FindModel(r.spec.model)->config.current_version};
  PAGODA_LOG(Info) << "gateway: rollout of " << r.spec.model << " to " << r.spec.version
                   << " succeeded; it is now the current version";
}

void RolloutController::EnterStep(Rollout& r, size_t step, Clock::time_point now) {
  r.state = RolloutState::kProgressing;
  r.step = step;
  r.step_started = now;
  r.baseline = counts_(r.spec.model + "@" + r.spec.version);
  ApplyTraffic(r);
  PAGODA_LOG(Info) << "gateway: rollout of " << r.spec.model << ": " << r.spec.version << " takes "
                   << r.spec.steps[step - 1] << "% of unpinned traffic (step " << step << "/" << r.spec.steps.size()
                   << ")";
}

void RolloutController::ApplyTraffic(const Rollout& r) {
  // Before step 1 nothing moved: the rollout leaves the table's traffic as it is.
  if (r.step == 0) return;
  const double p = r.spec.steps[r.step - 1];
  const Status st = table_->SetTraffic(r.spec.model, {{r.from, 100 - p}, {r.spec.version, p}}, r.from);
  if (!st.ok()) {
    PAGODA_LOG(Error) << "gateway: rollout of " << r.spec.model << ": " << st.message();
  }
}

void RolloutController::End(Rollout& r, RolloutState state, std::string reason, Clock::time_point now,
                            bool restore) {
  // One swap: every deployment's weight to 0 and the old version current,
  // i.e. 100% old. Nothing to undo when no traffic had moved.
  if (restore && r.step > 0) {
    if (Status st = table_->SetTraffic(r.spec.model, {}, r.from); !st.ok()) {
      PAGODA_LOG(Error) << "gateway: rollback of " << r.spec.model << " failed: " << st.message();
    }
  }
  if (state == RolloutState::kRolledBack) ++rollbacks_[r.spec.model];
  r.state = state;
  r.reason = std::move(reason);
  r.ended = now;
  PAGODA_LOG(Warning) << "gateway: rollout of " << r.spec.model << " " << r.from << " -> " << r.spec.version << " "
                      << RolloutStateName(state) << ": " << r.reason;
}

void RolloutController::Adopt(std::shared_ptr<RoutingTable> table, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  table_ = std::move(table);
  // Promotions hold until the file itself changes the model's current version.
  for (auto it = promoted_.begin(); it != promoted_.end();) {
    const ModelRoute* m = table_->FindModel(it->first);
    if (m == nullptr || m->FindDeployment(it->second.version) == nullptr ||
        m->config.current_version != it->second.config_current) {
      it = promoted_.erase(it);
      continue;
    }
    (void)table_->SetTraffic(it->first, table_->TrafficWeights(it->first), it->second.version);
    ++it;
  }
  for (auto& [name, r] : rollouts_) {
    if (!IsActive(r.state)) continue;
    const ModelRoute* m = table_->FindModel(name);
    for (const std::string& v : {r.from, r.spec.version}) {
      if (m == nullptr || m->FindDeployment(v) == nullptr) {
        // The new table follows its config: nothing of ours to undo there.
        End(r, RolloutState::kAborted, "a config reload removed " + name + "@" + v, now, /*restore=*/false);
        break;
      }
    }
    if (!IsActive(r.state)) continue;
    if (r.step == 0) {
      (void)table_->SetTraffic(name, table_->TrafficWeights(name), r.from);  // the old version stays current
    } else {
      ApplyTraffic(r);
    }
  }
}

RolloutStatus RolloutController::StatusOf(const Rollout& r, Clock::time_point now) const {
  RolloutStatus s;
  s.spec = r.spec;
  s.from_version = r.from;
  s.state = r.state;
  s.step = r.step;
  s.weights = table_->TrafficWeights(r.spec.model);
  s.current_version = table_->CurrentVersion(r.spec.model);
  if (r.state == RolloutState::kProgressing) s.percent = r.spec.steps[r.step - 1];
  if (r.state == RolloutState::kSucceeded) s.percent = 100;
  s.checks = r.checks;
  s.reason = r.reason;
  const Clock::time_point end = IsActive(r.state) ? now : r.ended;
  s.elapsed_ms = Ms(end - r.started);
  s.step_elapsed_ms = r.step > 0 ? Ms(end - r.step_started) : 0;
  return s;
}

std::string RolloutController::RenderMetrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream o;
  o << "# HELP pagoda_gateway_rollout_state Rollout per model: 0 none, 1 checking_health, 2 progressing, "
       "3 succeeded, 4 rolled_back, 5 aborted.\n# TYPE pagoda_gateway_rollout_state gauge\n";
  for (const auto& [name, r] : rollouts_) {
    o << "pagoda_gateway_rollout_state{model=\"" << EscapeLabelValue(name) << "\"} "
      << static_cast<int>(r.state) + 1 << "\n";
  }
  o << "# HELP pagoda_gateway_rollout_step The rollout's step (1-based; 0 before traffic moves).\n"
       "# TYPE pagoda_gateway_rollout_step gauge\n";
  for (const auto& [name, r] : rollouts_) {
    o << "pagoda_gateway_rollout_step{model=\"" << EscapeLabelValue(name) << "\"} " << r.step << "\n";
  }
  o << "# HELP pagoda_gateway_rollout_traffic_percent Share of unpinned traffic the rollout gives each version.\n"
       "# TYPE pagoda_gateway_rollout_traffic_percent gauge\n";
  for (const auto& [name, r] : rollouts_) {
    if (!IsActive(r.state)) continue;
    const double p = r.step > 0 ? r.spec.steps[r.step - 1] : 0;
    o << "pagoda_gateway_rollout_traffic_percent{model=\"" << EscapeLabelValue(name) << "\",version=\""
      << EscapeLabelValue(r.spec.version) << "\"} " << p << "\n"
      << "pagoda_gateway_rollout_traffic_percent{model=\"" << EscapeLabelValue(name) << "\",version=\""
      << EscapeLabelValue(r.from) << "\"} " << 100 - p << "\n";
  }
  o << "# HELP pagoda_gateway_rollbacks_total Rollouts rolled back by a failing check.\n"
       "# TYPE pagoda_gateway_rollbacks_total counter\n";
  for (const auto& [name, n] : rollbacks_) {
    o << "pagoda_gateway_rollbacks_total{model=\"" << EscapeLabelValue(name) << "\"} " << n << "\n";
  }
  return o.str();
}

void RolloutController::StartTicking(std::chrono::milliseconds interval) {
  if (ticker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(tick_mu_);
    stop_ = false;
  }
  ticker_ = std::thread([this, interval] {
    std::unique_lock<std::mutex> lock(tick_mu_);
    while (!stop_) {
      lock.unlock();
      Tick(Clock::now());
      lock.lock();
      tick_cv_.wait_for(lock, interval, [&] { return stop_; });
    }
  });
}

void RolloutController::StopTicking() {
  {
    std::lock_guard<std::mutex> lock(tick_mu_);
    stop_ = true;
  }
  tick_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

}  // namespace pagoda::gateway
