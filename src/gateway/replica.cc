#include "gateway/replica.h"

#include <algorithm>

namespace pagoda::gateway {

HealthOptions HealthOptionsFrom(const GatewayConfig& c) {
  HealthOptions o;
  o.eject_after_failures = c.eject_after_failures;
  o.circuit_open = std::chrono::milliseconds(c.circuit_open_ms);
  o.slow_start = std::chrono::milliseconds(c.slow_start_ms);
  o.readmit_after_probes = c.readmit_after_probes;
  return o;
}

ReplicaState::ReplicaState(HealthOptions options)
    : options_(options), circuit_(options.eject_after_failures, options.circuit_open) {}

void ReplicaState::set_options(HealthOptions o) {
  std::lock_guard<std::mutex> lock(mu_);
  // The circuit keeps its state; new thresholds apply to circuits built later.
  options_ = o;
}

bool ReplicaState::Eligible(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  return probe_healthy_ && circuit_.CanSend(now);
}

double ReplicaState::Ramp(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ramping_ || options_.slow_start.count() <= 0) return 1.0;
  const double f = std::chrono::duration<double>(now - admitted_at_).count() /
                   std::chrono::duration<double>(options_.slow_start).count();
  return std::clamp(f, 0.1, 1.0);
}

bool ReplicaState::OnSend(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  return circuit_.OnSend(now);
}

void ReplicaState::OnSuccess(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_open = circuit_.state(now) != CircuitBreaker::State::kClosed;
  circuit_.OnSuccess(now);
  if (was_open) {
    ramping_ = true;
    admitted_at_ = now;
  }
}

void ReplicaState::OnFailure(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (circuit_.OnFailure(now)) ++ejections_;
}

void ReplicaState::OnAbandoned() {
  std::lock_guard<std::mutex> lock(mu_);
  circuit_.OnAbandoned();
}

void ReplicaState::OnProbe(bool ok, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok) {
    passing_probes_ = 0;
    if (probe_healthy_) Eject(now);
    return;
  }
  if (probe_healthy_) return;
  if (++passing_probes_ >= options_.readmit_after_probes) {
    probe_healthy_ = true;
    passing_probes_ = 0;
    ramping_ = true;
    admitted_at_ = now;
    // A replica that probes healthy again gets a fresh circuit.
    circuit_ = CircuitBreaker(options_.eject_after_failures, options_.circuit_open);
  }
}

void ReplicaState::Eject(Clock::time_point now) {
  (void)now;
  probe_healthy_ = false;
  ramping_ = false;
  ++ejections_;
}

uint64_t ReplicaState::ejections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ejections_;
}

ReplicaSnapshot ReplicaState::Snapshot(Clock::time_point now) const {
  ReplicaSnapshot s;
  s.active_requests = active_requests.load();
  s.active_blocks = active_blocks.load();
  s.ramp = Ramp(now);
  std::lock_guard<std::mutex> lock(mu_);
  s.probe_healthy = probe_healthy_;
  s.circuit = circuit_.state(now);
  s.ejections = ejections_;
  s.consecutive_failures = circuit_.consecutive_failures();
  return s;
}

LoadGuard::LoadGuard(std::shared_ptr<ReplicaState> state, int64_t blocks)
    : state_(std::move(state)), blocks_(blocks) {
  if (state_) {
    state_->active_requests.fetch_add(1);
    state_->active_blocks.fetch_add(blocks_);
  }
}

LoadGuard& LoadGuard::operator=(LoadGuard&& o) noexcept {
  if (this != &o) {
    Release();
    state_ = std::move(o.state_);
    blocks_ = o.blocks_;
    o.state_.reset();
  }
  return *this;
}

void LoadGuard::Release() {
  if (!state_) return;
  state_->active_requests.fetch_sub(1);
  state_->active_blocks.fetch_sub(blocks_);
  state_.reset();
}

int64_t EstimateBlocks(int64_t prompt_tokens, int64_t max_tokens, int block_size) {
  const int64_t bs = std::max(1, block_size);
  const int64_t total = std::max<int64_t>(0, prompt_tokens) + std::max<int64_t>(0, max_tokens);
  return std::max<int64_t>(1, (total + bs - 1) / bs);
}

}  // namespace pagoda::gateway
