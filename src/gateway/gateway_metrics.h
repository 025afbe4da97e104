// GatewayMetrics: the gateway's Prometheus counters (requests per replica,
// deployment, policy and status class; retries; upstream errors by kind;
// added-latency histogram; predicted vs reported cached tokens; prefill/decode
// disaggregation outcomes and prefill times). Per-replica
// gauges (active load, health, circuit, ejections, capacity pool) are read
// from the routing table at scrape time, the KV event feed's figures from the
// feed.
// Labels carry names and ids only, never prompts or keys.
// Thread safety: any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <optional>
#include <tuple>

#include "base/histogram.h"
#include "base/workload_class.h"
#include "gateway/kv_event_feed.h"
#include "gateway/pd_router.h"
#include "gateway/routing_table.h"
#include "gateway/usage_reader.h"
#include "http/server.h"

namespace pagoda::gateway {

// A Prometheus label value: backslash, quote and newline escaped.
std::string EscapeLabelValue(const std::string& s);

// Attempts routed to one deployment, and how many failed (5xx, connection
// error, timeout or garbage; "retried" attempts count as failed).
struct DeploymentCounts {
  uint64_t requests = 0;
  uint64_t failures = 0;
};

// The gateway's HTTP server's own counters:
// pagoda_gateway_tls_handshake_failures_total (plain HTTP to the TLS port,
// a bad client hello, a client refusing the certificate, a timeout).
std::string RenderServerMetrics(const http::ServerStats& stats);

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
  // A request no replica of its class's pool could take (RouteDecision::pool_fallback).
  void RecordPoolFallback(const std::string& model, WorkloadClass c);
  // A request answered 2xx: the router's predicted cached tokens and what
  // the replica reported (nullopt: no usage in the response).
  void RecordCachedTokens(const std::string& replica, const std::string& deployment, int64_t predicted,
                          const std::optional<ReportedUsage>& reported);
  // A request of a deployment with prefill replicas: what became of it
  // (pagoda_gateway_pd_requests_total), and the time its prefill leg took
  // (pagoda_gateway_pd_prefill_seconds; requests that ran one).
  void RecordPd(const std::string& model, PdOutcome outcome);
  void RecordPrefillSeconds(double seconds);
  // The feed whose figures Render adds (borrowed; null: none).
  void set_kv_event_feed(const KvEventFeed* feed) { feed_ = feed; }

  // Prometheus text exposition, with the table's per-replica gauges.
  std::string Render(const RoutingTable& table) const;

  // Per replica id, cumulative: what the console's dashboard shows beside
  // the replica's own figures (docs/CONSOLE.md).
  struct ReplicaTraffic {
    std::map<std::string, uint64_t> requests;  // by status class ("2xx", "5xx", "cancelled", ...)
    uint64_t upstream_errors = 0;
    // Cached prompt tokens the router predicted and the replica reported, over `responses` 2xx answers.
    uint64_t cached_predicted = 0, cached_reported = 0, prompt_tokens = 0, responses = 0;
  };
  std::map<std::string, ReplicaTraffic> TrafficByReplica() const;
  // Requests the gateway answered itself, by HTTP status.
  std::map<int, uint64_t> RouteErrors() const;

  uint64_t requests_total() const;
  // Cumulative; a rollout's error-rate check reads the difference over its window.
  DeploymentCounts CountsFor(const std::string& deployment) const;
  uint64_t retries_total() const;

 private:
  struct CachedTokens {
    uint64_t predicted = 0, reported = 0, prompt = 0, responses = 0, with_usage = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, uint64_t> requests_;  // guarded by mu_
  std::map<std::string, uint64_t> retries_;                                                   // guarded by mu_
  std::map<std::pair<std::string, std::string>, uint64_t> upstream_errors_;                    // guarded by mu_
  std::map<int, uint64_t> route_errors_;                                                      // guarded by mu_
  std::map<std::pair<std::string, std::string>, uint64_t> pool_fallbacks_;                     // guarded by mu_
  std::map<std::pair<std::string, std::string>, CachedTokens> cached_;                         // guarded by mu_
  std::map<std::pair<std::string, std::string>, uint64_t> pd_requests_;                        // guarded by mu_
  BucketHistogram added_latency_{BucketHistogram::LatencyBounds()};
  BucketHistogram prefill_seconds_{{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  const KvEventFeed* feed_ = nullptr;
  uint64_t reloads_ok_ = 0, reloads_failed_ = 0;                                              // guarded by mu_
};

}  // namespace pagoda::gateway
