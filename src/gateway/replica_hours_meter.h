// ReplicaHoursMeter: meters dedicated deployments (models whose config names
// a tenant) in replica-hours. A background thread wakes every few seconds and
// offers each such deployment's current replica count to the control plane,
// which counts each (deployment, minute) once across every gateway process
// sharing the store (ControlPlane::MeterReplicaMinute).
// Thread safety: Start/Stop from the controlling thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "control/control_plane.h"
#include "gateway/routing_table.h"

namespace pagoda::gateway {

class ReplicaHoursMeter {
 public:
  ReplicaHoursMeter(control::ControlPlane* control, std::function<std::shared_ptr<const RoutingTable>()> table,
                    std::chrono::milliseconds period = std::chrono::seconds(5));
  ~ReplicaHoursMeter();  // Stop()
  void Start();
  void Stop();
  // One pass (the thread's body; tests call it directly).
  void Tick();

 private:
  control::ControlPlane* control_;
  std::function<std::shared_ptr<const RoutingTable>()> table_;
  std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace pagoda::gateway
