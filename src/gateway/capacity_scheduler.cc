#include "gateway/capacity_scheduler.h"

#include <nlohmann/json.hpp>

#include "base/log.h"

namespace pagoda::gateway {
namespace {

using TimePoint = std::chrono::system_clock::time_point;

std::vector<ScheduleReplica> NamesOf(const Deployment& dep) {
  std::vector<ScheduleReplica> out;
  for (const auto& r : dep.replicas) out.push_back({r->id(), r->config().url});
  return out;
}

}  // namespace

WallClock SystemWallClock() {
  return [] { return std::chrono::system_clock::now(); };
}

CapacityScheduler::CapacityScheduler(WallClock clock) : clock_(std::move(clock)) {}

CapacityScheduler::~CapacityScheduler() { StopTicking(); }

void CapacityScheduler::Adopt(std::shared_ptr<const RoutingTable> table) {
  std::map<std::string, Entry> schedules;
  for (const ModelConfig& mc : table->config().models) {
    const ModelRoute* m = table->FindModel(mc.name);
    for (const DeploymentConfig& dc : mc.deployments) {
      if (!dc.schedule) continue;
      const Deployment* dep = m->FindDeployment(dc.version);
      auto bound = BoundSchedule::Bind(*dc.schedule, NamesOf(*dep));
      if (!bound.ok()) {  // the config parser bound it already: not expected
        PAGODA_LOG(Error) << "gateway: the schedule of " << dep->key << " is ignored: " << bound.status().message();
        continue;
      }
      schedules.emplace(dep->key, Entry{std::move(bound).value(), "config"});
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  table_ = std::move(table);
  schedules_ = std::move(schedules);
  ApplyLocked(clock_());
}

const Deployment* CapacityScheduler::FindLocked(std::string_view model, std::string_view version) const {
  if (!table_) return nullptr;
  const ModelRoute* m = table_->FindModel(model);
  return m == nullptr ? nullptr : m->FindDeployment(version);
}

Status CapacityScheduler::Set(std::string_view model, std::string_view version, CapacitySchedule schedule) {
  std::lock_guard<std::mutex> lock(mu_);
  const Deployment* dep = FindLocked(model, version);
  if (dep == nullptr) {
    return NotFound("no deployment '" + std::string(model) + "@" + std::string(version) + "'");
  }
  auto bound = BoundSchedule::Bind(std::move(schedule), NamesOf(*dep));
  if (!bound.ok()) return bound.status();
  schedules_.insert_or_assign(dep->key, Entry{std::move(bound).value(), "admin"});
  PAGODA_LOG(Info) << "gateway: the schedule of " << dep->key << " was set through the admin API";
  ApplyLocked(clock_());
  return Status::Ok();
}

Status CapacityScheduler::Remove(std::string_view model, std::string_view version) {
  std::lock_guard<std::mutex> lock(mu_);
  const Deployment* dep = FindLocked(model, version);
  if (dep == nullptr) {
    return NotFound("no deployment '" + std::string(model) + "@" + std::string(version) + "'");
  }
  if (schedules_.erase(dep->key) == 0) return NotFound("'" + dep->key + "' has no schedule");
  PAGODA_LOG(Info) << "gateway: the schedule of " << dep->key << " was removed through the admin API";
  ApplyLocked(clock_());
  return Status::Ok();
}

void CapacityScheduler::Apply() {
  std::lock_guard<std::mutex> lock(mu_);
  ApplyLocked(clock_());
}

void CapacityScheduler::ApplyLocked(TimePoint now) {
  if (!table_) return;
  for (const ModelConfig& mc : table_->config().models) {
    const ModelRoute* m = table_->FindModel(mc.name);
    for (const Deployment& dep : m->deployments) {
      const auto it = schedules_.find(dep.key);
      std::vector<Pool> pools(dep.replicas.size(), Pool::kShared);
      if (it != schedules_.end() && it->second.bound.replica_count() == dep.replicas.size()) {
        pools = it->second.bound.PoolsAt(now);
      }
      for (size_t i = 0; i < dep.replicas.size(); ++i) {
        const Pool was = dep.replicas[i]->state().pool.exchange(pools[i]);
        if (was != pools[i]) {
          PAGODA_LOG(Info) << "gateway: replica " << dep.replicas[i]->id() << " of " << dep.key << " moves from the "
                           << PoolName(was) << " pool to the " << PoolName(pools[i]) << " pool";
        }
      }
    }
  }
}

void CapacityScheduler::StartTicking(std::chrono::milliseconds period) {
  StopTicking();
  {
    std::lock_guard<std::mutex> lock(tick_mu_);
    stop_ = false;
  }
  ticker_ = std::thread([this, period] {
    std::unique_lock<std::mutex> lock(tick_mu_);
    while (!tick_cv_.wait_for(lock, period, [this] { return stop_; })) {
      lock.unlock();
      Apply();
      lock.lock();
    }
  });
}

void CapacityScheduler::StopTicking() {
  {
    std::lock_guard<std::mutex> lock(tick_mu_);
    stop_ = true;
  }
  tick_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

nlohmann::json CapacityScheduler::EntryJson(const ModelRoute& model, const Deployment& dep, TimePoint now) const {
  const auto it = schedules_.find(dep.key);
  const Entry* e = it != schedules_.end() && it->second.bound.replica_count() == dep.replicas.size() ? &it->second
                                                                                                     : nullptr;
  const int offset = e != nullptr ? e->bound.schedule().utc_offset_minutes : 0;
  std::vector<std::optional<PoolChange>> next(dep.replicas.size());
  if (e != nullptr) next = e->bound.NextChanges(now);
  nlohmann::json replicas = nlohmann::json::array();
  for (size_t i = 0; i < dep.replicas.size(); ++i) {
    const Replica& r = *dep.replicas[i];
    replicas.push_back({{"id", r.id()},
                        {"url", r.config().url},
                        {"pool", PoolName(r.state().pool.load())},
                        {"next_pool", next[i] ? nlohmann::json(PoolName(next[i]->pool)) : nlohmann::json(nullptr)},
                        {"next_change", next[i] ? nlohmann::json(FormatTimeAt(next[i]->at, offset))
                                                : nlohmann::json(nullptr)}});
  }
  return {{"model", model.config.name},
          {"version", dep.version},
          {"deployment", dep.key},
          {"source", e != nullptr ? nlohmann::json(e->source) : nlohmann::json(nullptr)},
          {"schedule", e != nullptr ? ScheduleToJson(e->bound.schedule()) : nlohmann::json(nullptr)},
          {"replicas", replicas}};
}

nlohmann::json CapacityScheduler::ToJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  const TimePoint now = clock_();
  nlohmann::json list = nlohmann::json::array();
  if (table_) {
    for (const auto& mc : table_->config().models) {
      const ModelRoute* m = table_->FindModel(mc.name);
      for (const Deployment& dep : m->deployments) list.push_back(EntryJson(*m, dep, now));
    }
  }
  return {{"now", FormatTimeAt(now, 0)}, {"schedules", list}};
}

std::optional<nlohmann::json> CapacityScheduler::DeploymentJson(std::string_view model,
                                                                std::string_view version) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Deployment* dep = FindLocked(model, version);
  if (dep == nullptr) return std::nullopt;
  return EntryJson(*table_->FindModel(model), *dep, clock_());
}

}  // namespace pagoda::gateway
