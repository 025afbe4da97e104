#include "gateway/replica_hours_meter.h"

namespace pagoda::gateway {

ReplicaHoursMeter::ReplicaHoursMeter(control::ControlPlane* control,
                                     std::function<std::shared_ptr<const RoutingTable>()> table,
                                     std::chrono::milliseconds period)
    : control_(control), table_(std::move(table)), period_(period) {}

ReplicaHoursMeter::~ReplicaHoursMeter() { Stop(); }

void ReplicaHoursMeter::Start() {
  if (control_ == nullptr || thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      lock.unlock();
      Tick();
      lock.lock();
      cv_.wait_for(lock, period_, [this] { return stop_; });
    }
  });
}

void ReplicaHoursMeter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReplicaHoursMeter::Tick() {
  const auto table = table_();
  if (!table || control_ == nullptr) return;
  for (const ModelConfig& m : table->config().models) {
    if (m.tenant.empty()) continue;
    for (const DeploymentConfig& d : m.deployments) {
      control_->MeterReplicaMinute(m.tenant, m.name + "@" + d.version, m.name, static_cast<int>(d.replicas.size()));
    }
  }
}

}  // namespace pagoda::gateway
