#include "gateway/health_checker.h"

#include "base/log.h"
#include "gateway/health_probe.h"

namespace pagoda::gateway {

HealthChecker::HealthChecker(http::UpstreamClient* client, TableSource tables)
    : client_(client), tables_(std::move(tables)) {}

HealthChecker::~HealthChecker() { Stop(); }

void HealthChecker::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void HealthChecker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HealthChecker::ProbeAll() {
  auto table = tables_();
  if (!table) return;
  const auto timeout = std::chrono::milliseconds(table->config().health_timeout_ms);
  for (const auto& r : table->AllReplicas()) {
    if (r->external()) continue;
    ProbeHealth(*client_, *r, timeout, [state = r->shared_state(), id = r->id()](bool ok, const std::string& why) {
      const bool was = state->Snapshot(std::chrono::steady_clock::now()).probe_healthy;
      if (!ok && was) {
        PAGODA_LOG(Warning) << "gateway: replica " << id << " failed its health probe (" << why << "); ejected";
      }
      state->OnProbe(ok, std::chrono::steady_clock::now());
    });
  }
}

void HealthChecker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    ProbeAll();
    auto table = tables_();
    const auto interval = std::chrono::milliseconds(table ? table->config().health_interval_ms : 1000);
    lock.lock();
    cv_.wait_for(lock, interval, [&] { return stop_; });
  }
}

}  // namespace pagoda::gateway
