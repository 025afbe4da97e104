// Replica: one backend the gateway routes to. Its configuration is immutable;
// its live state (load counts, probe health, circuit breaker, slow start)
// lives in a shared ReplicaState that a config reload hands on to the new
// Replica object when the replica stays (same id and URL), so load counted
// by requests in flight carries over. In-flight requests keep their
// shared_ptr<const Replica> across a reload.
// Thread safety: ReplicaState's methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "gateway/circuit_breaker.h"
#include "gateway/gateway_config.h"
#include "gateway/pool.h"

namespace pagoda::gateway {

struct HealthOptions {
  int eject_after_failures = 3;
  std::chrono::milliseconds circuit_open{5000};
  std::chrono::milliseconds slow_start{10'000};
  int readmit_after_probes = 2;
};

HealthOptions HealthOptionsFrom(const GatewayConfig& c);

struct ReplicaSnapshot {
  bool probe_healthy = true;
  CircuitBreaker::State circuit = CircuitBreaker::State::kClosed;
  int64_t active_requests = 0;
  int64_t active_blocks = 0;
  double ramp = 1.0;  // slow-start factor in (0, 1]
  uint64_t ejections = 0;
  int consecutive_failures = 0;
};

class ReplicaState {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ReplicaState(HealthOptions options);

  // Routing filter: probes pass and the circuit would let a request through.
  bool Eligible(Clock::time_point now) const;
  // Slow start: in (0, 1], 1 once the replica has been back for the window.
  double Ramp(Clock::time_point now) const;

  // A request is dispatched (false: the circuit refused it at the last moment).
  bool OnSend(Clock::time_point now);
  void OnSuccess(Clock::time_point now);
  void OnFailure(Clock::time_point now);  // connection error, 5xx, timeout
  void OnAbandoned();                     // cancelled before a verdict
  // An active probe's result.
  void OnProbe(bool ok, Clock::time_point now);

  std::atomic<int64_t> active_requests{0};
  std::atomic<int64_t> active_blocks{0};
  // The pool its deployment's capacity schedule puts it in now (set by the
  // CapacityScheduler; shared when none applies). Read at routing only, so a
  // change steers new requests and leaves dispatched ones alone.
  std::atomic<Pool> pool{Pool::kShared};

  ReplicaSnapshot Snapshot(Clock::time_point now) const;
  uint64_t ejections() const;
  void set_options(HealthOptions o);

 private:
  void Eject(Clock::time_point now);  // mu_ held

  mutable std::mutex mu_;
  HealthOptions options_;            // guarded by mu_
  CircuitBreaker circuit_;           // guarded by mu_
  bool probe_healthy_ = true;        // guarded by mu_: optimistic until a probe fails
  int passing_probes_ = 0;           // guarded by mu_: consecutive, while unhealthy
  Clock::time_point admitted_at_{};  // guarded by mu_: re-admission (slow start origin)
  bool ramping_ = false;             // guarded by mu_
  uint64_t ejections_ = 0;           // guarded by mu_
};

// What differs for an external OpenAI-compatible upstream.
struct ExternalInfo {
  std::string upstream;  // its [[upstreams]] name
  std::string api_key;   // from the environment; replaces the client's Authorization
  std::string model;     // the model name sent upstream ("" keeps the request's)
};

class Replica {
 public:
  Replica(ReplicaConfig config, std::string model, std::string version, std::shared_ptr<ReplicaState> state)
      : config_(std::move(config)), model_(std::move(model)), version_(std::move(version)),
        deployment_(model_ + "@" + version_), state_(std::move(state)) {}
  // An external upstream, as a replica of the pseudo-deployment "upstream:<name>".
  Replica(ReplicaConfig config, ExternalInfo external, std::shared_ptr<ReplicaState> state)
      : config_(std::move(config)), deployment_("upstream:" + external.upstream), state_(std::move(state)),
        external_(std::move(external)), is_external_(true) {}
  bool external() const { return is_external_; }
  const ExternalInfo& external_info() const { return external_; }

  const ReplicaConfig& config() const { return config_; }
  const std::string& id() const { return config_.id; }
  const std::string& model() const { return model_; }
  const std::string& version() const { return version_; }
  const std::string& deployment() const { return deployment_; }  // "model@version"
  ReplicaState& state() const { return *state_; }
  const std::shared_ptr<ReplicaState>& shared_state() const { return state_; }

 private:
  ReplicaConfig config_;
  std::string model_, version_, deployment_;
  std::shared_ptr<ReplicaState> state_;
  ExternalInfo external_;
  bool is_external_ = false;
};

// RAII load count: taken at dispatch, released exactly once when the request
// ends, whichever way it ends (Release() early, or destruction).
class LoadGuard {
 public:
  LoadGuard() = default;
  LoadGuard(std::shared_ptr<ReplicaState> state, int64_t blocks);
  ~LoadGuard() { Release(); }
  LoadGuard(LoadGuard&& o) noexcept : state_(std::move(o.state_)), blocks_(o.blocks_) { o.state_.reset(); }
  LoadGuard& operator=(LoadGuard&& o) noexcept;
  LoadGuard(const LoadGuard&) = delete;
  LoadGuard& operator=(const LoadGuard&) = delete;

  void Release();
  bool held() const { return state_ != nullptr; }

 private:
  std::shared_ptr<ReplicaState> state_;
  int64_t blocks_ = 0;
};

// ceil((prompt tokens + max_tokens) / block_size), at least 1.
int64_t EstimateBlocks(int64_t prompt_tokens, int64_t max_tokens, int block_size);

}  // namespace pagoda::gateway
