#include "gateway/health_checker.h"

#include "base/log.h"

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
    http::UpstreamRequest req;
    req.host = r->config().endpoint.host;
    req.port = r->config().endpoint.port;
    req.tls = r->config().endpoint.scheme == "https";
    req.ca_file = r->config().ca_file;
    req.method = "GET";
    req.target = r->config().endpoint.base_path + "/health";
    req.connect_timeout = timeout;
    req.first_byte_timeout = timeout;
    req.idle_timeout = timeout;
    req.deadline = std::chrono::steady_clock::now() + timeout;
    auto state = r->shared_state();
    auto status = std::make_shared<int>(0);
    http::UpstreamEvents ev;
    ev.on_head = [status](const http::UpstreamResponseHead& h) { *status = h.status; };
    ev.on_done = [state, status, id = r->id()](const http::UpstreamOutcome& o) {
      if (o.error == http::UpstreamError::kCancelled) return;
      const bool ok = o.error == http::UpstreamError::kNone && *status == 200;
      const bool was = state->Snapshot(std::chrono::steady_clock::now()).probe_healthy;
      if (!ok && was) {
        PAGODA_LOG(Warning) << "gateway: replica " << id << " failed its health probe ("
                            << (o.error == http::UpstreamError::kNone ? "status " + std::to_string(*status)
                                                                      : o.message)
                            << "); ejected";
      }
      state->OnProbe(ok, std::chrono::steady_clock::now());
    };
    client_->Start(std::move(req), std::move(ev));
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
