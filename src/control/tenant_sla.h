// TenantSla: each tenant's service levels as its clients saw them: time to
// first token and inter-token latency (p50/p95 over a sliding window), error
// rate and completion throughput against the tenant's reservation. Fed once
// per finished request from metadata only (times, counts, status); rendered
// on /metrics and as JSON on the admin API. Thread safety: any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

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

  struct Figures {
    std::string tenant;
    int64_t requests = 0;          // in the window
    double ttft_p50 = 0, ttft_p95 = 0;
    double itl_p50 = 0, itl_p95 = 0;
    double error_rate = 0;         // errors / requests in the window
    double tokens_per_second = 0;  // completion tokens over the last minute / 60
    double reserved_tokens_per_second = 0;  // sum over the tenant's reservations
  };
  std::vector<Figures> Snapshot(Clock::time_point now = Clock::now()) const;

  // Prometheus text: pagoda_tenant_ttft_seconds{tenant,quantile}, ...
  std::string RenderPrometheus(Clock::time_point now = Clock::now()) const;
  nlohmann::json ToJson(Clock::time_point now = Clock::now()) const;

 private:
  struct Sample {
    Clock::time_point at;
    double ttft = -1, itl = -1;
    bool ok = true;
    int64_t tokens = 0;
  };
  struct Tenant {
    std::vector<Sample> ring;  // at most max_samples_, oldest overwritten
    size_t next = 0;
    std::map<std::string, double> reserved;  // model -> tokens/s
  };
  Figures Compute(const std::string& name, const Tenant& t, Clock::time_point now) const;

  const std::chrono::seconds window_;
  const size_t max_samples_;
  mutable std::mutex mu_;
  std::map<std::string, Tenant> tenants_;  // guarded by mu_
};

}  // namespace pagoda::control
