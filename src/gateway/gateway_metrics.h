// GatewayMetrics: the gateway's Prometheus counters (requests per replica,
// deployment, policy and status class; retries; upstream errors by kind;
// added-latency histogram). Per-replica gauges (active load, health,
// circuit, ejections) are read from the routing table at scrape time.
// Labels carry names and ids only, never prompts or keys.
// Thread safety: any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "gateway/routing_table.h"

namespace pagoda::gateway {

// A Prometheus label value: backslash, quote and newline escaped.
std::string EscapeLabelValue(const std::string& s);

// Attempts routed to one deployment, and how many failed (5xx, connection
// error, timeout or garbage; "retried" attempts count as failed).
struct DeploymentCounts {
  uint64_t requests = 0;
  uint64_t failures = 0;
};

class GatewayMetrics {
 public:
  // status_class: "2xx", "4xx", "5xx", or "cancelled" (the client left).
  void RecordRequest(const std::string& replica, const std::string& deployment, const std::string& policy,
                     const std::string& status_class);
  void RecordRetry(const std::string& deployment);
  void RecordUpstreamError(const std::string& replica, const std::string& kind);
  void RecordRouteError(int status);  // answered by the gateway itself (404, 503, ...)
  void RecordAddedLatency(double seconds);
  void RecordReload(bool ok);

  // Prometheus text exposition, with the table's per-replica gauges.
  std::string Render(const RoutingTable& table) const;

  uint64_t requests_total() const;
  // Cumulative; a rollout's error-rate check reads the difference over its window.
  DeploymentCounts CountsFor(const std::string& deployment) const;
  uint64_t retries_total() const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                       0.01,   0.025,   0.05,   0.1,   0.25,   1.0};
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, uint64_t> requests_;  // guarded by mu_
  std::map<std::string, uint64_t> retries_;                                                   // guarded by mu_
  std::map<std::pair<std::string, std::string>, uint64_t> upstream_errors_;                    // guarded by mu_
  std::map<int, uint64_t> route_errors_;                                                      // guarded by mu_
  std::array<uint64_t, kBuckets.size() + 1> latency_buckets_{};                                // guarded by mu_
  double latency_sum_ = 0;                                                                    // guarded by mu_
  uint64_t latency_count_ = 0;                                                                // guarded by mu_
  uint64_t reloads_ok_ = 0, reloads_failed_ = 0;                                              // guarded by mu_
};

}  // namespace pagoda::gateway
