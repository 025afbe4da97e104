// TenantSla: each tenant's service levels as its clients saw them: time to
// first token and inter-token latency (p50/p95 over a sliding window), error
// rate and completion throughput against the tenant's reservation. Fed once
// per finished request from metadata only (times, counts, status); rendered
// on /metrics and as JSON on the admin API. Reservations come from a source
// (the control plane's store, re-read when its generation moves) asked before
// every snapshot, so one set or deleted through the admin API of any process
// shows at once. Thread safety: any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tenancy/records.h"

namespace pagoda::control {

struct RequestTiming {
  std::string tenant;
  std::string model;
  bool ok = true;                 // answered without error (cancelled counts as ok)
  double ttft_seconds = -1;       // < 0: no token was produced
  double mean_itl_seconds = -1;   // mean gap between later tokens; < 0: fewer than 2 tokens
  int64_t completion_tokens = 0;
};

class TenantSla {
 public:
  using Clock = std::chrono::steady_clock;
  // Quantiles cover the last `window` (and at most `max_samples` requests per tenant).
  explicit TenantSla(std::chrono::seconds window = std::chrono::seconds(300), size_t max_samples = 4096);
  ~TenantSla();

  void Record(const RequestTiming& t, Clock::time_point now = Clock::now());
  // Tokens per second reserved for (tenant, model): provisioned plans.
  void SetReservation(const std::string& tenant, const std::string& model, double tokens_per_second);
  // Every reservation, when they can change while the process runs: called
  // (outside the lock) at the start of each Snapshot, Prometheus text and
  // JSON; what it returns replaces all reservations. nullopt keeps the last
  // known ones (the store could not answer). Set once, before use.
  using ReservationSource = std::function<std::optional<std::vector<tenancy::Reservation>>()>;
  void SetReservationSource(ReservationSource source);

  struct Figures {
    std::string tenant;
    int64_t requests = 0;          // in the window
    double ttft_p50 = 0, ttft_p95 = 0;
    double itl_p50 = 0, itl_p95 = 0;
    double error_rate = 0;         // errors / requests in the window
    double tokens_per_second = 0;  // completion tokens over the last minute (whole seconds) / 60
    double reserved_tokens_per_second = 0;  // sum over the tenant's reservations
  };
  std::vector<Figures> Snapshot(Clock::time_point now = Clock::now()) const;
  // Completion tokens per second over the last minute, on `model` ("" = all
  // models): what a provisioned tenant is getting against its reservation.
  double TokensPerSecond(const std::string& tenant, const std::string& model,
                         Clock::time_point now = Clock::now()) const;

  // Prometheus text: pagoda_tenant_ttft_seconds{tenant,quantile}, ...
  std::string RenderPrometheus(Clock::time_point now = Clock::now()) const;
  nlohmann::json ToJson(Clock::time_point now = Clock::now()) const;

 private:
  struct Sample {
    Clock::time_point at;
    double ttft = -1, itl = -1;
    bool ok = true;
  };
  // Completion tokens of the last 60 whole seconds, one bucket a second:
  // throughput does not depend on how many requests the sample ring holds
  // (a burst of failing requests must not evict the tokens of the minute).
  struct MinuteTokens {
    std::array<int64_t, 60> tokens{};
    std::array<int64_t, 60> second{};  // the steady-clock second each bucket holds (0: none)
    void Add(Clock::time_point at, int64_t n);
    int64_t Sum(Clock::time_point now) const;
  };
  struct Tenant {
    std::vector<Sample> ring;  // at most max_samples_, oldest overwritten
    size_t next = 0;
    std::map<std::string, MinuteTokens> minute;  // by model
  };
  using Reserved = std::map<std::string, double>;  // model -> tokens/s
  Figures Compute(const std::string& name, const Tenant* t, const Reserved* reserved, Clock::time_point now) const;
  void Refresh() const;  // the source's reservations into reserved_

  const std::chrono::seconds window_;
  const size_t max_samples_;
  mutable std::mutex mu_;
  std::map<std::string, Tenant> tenants_;  // guarded by mu_
  // tenant -> its reservations: a copy of the source's (hence mutable), guarded by mu_.
  mutable std::map<std::string, Reserved> reserved_;
  ReservationSource source_;
};

}  // namespace pagoda::control
