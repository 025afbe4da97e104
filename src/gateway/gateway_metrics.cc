#include "gateway/gateway_metrics.h"

#include "base/prometheus_text.h"

#include <algorithm>
#include <sstream>

namespace pagoda::gateway {
namespace {

constexpr auto Esc = &PromLabel;
constexpr auto Num = &PromNumber;

}  // namespace

std::string EscapeLabelValue(const std::string& s) { return PromLabel(s); }

void GatewayMetrics::RecordRequest(const std::string& replica, const std::string& deployment,
                                   const std::string& policy, const std::string& status_class) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{replica, deployment, policy, status_class}];
}

void GatewayMetrics::RecordRetry(const std::string& deployment) {
  std::lock_guard<std::mutex> lock(mu_);
  ++retries_[deployment];
}

void GatewayMetrics::RecordUpstreamError(const std::string& replica, const std::string& kind) {
  std::lock_guard<std::mutex> lock(mu_);
  ++upstream_errors_[{replica, kind}];
}

void GatewayMetrics::RecordRouteError(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++route_errors_[status];
}

void GatewayMetrics::RecordPoolFallback(const std::string& model, WorkloadClass c) {
  std::lock_guard<std::mutex> lock(mu_);
  ++pool_fallbacks_[{model, WorkloadClassName(c)}];
}

void GatewayMetrics::RecordAddedLatency(double seconds) { added_latency_.Observe(seconds); }

void GatewayMetrics::RecordPd(const std::string& model, PdOutcome outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++pd_requests_[{model, PdOutcomeName(outcome)}];
}

void GatewayMetrics::RecordPrefillSeconds(double seconds) { prefill_seconds_.Observe(seconds); }

void GatewayMetrics::RecordCachedTokens(const std::string& replica, const std::string& deployment, int64_t predicted,
                                        const std::optional<ReportedUsage>& reported) {
  std::lock_guard<std::mutex> lock(mu_);
  CachedTokens& c = cached_[{replica, deployment}];
  ++c.responses;
  c.predicted += static_cast<uint64_t>(std::max<int64_t>(0, predicted));
  if (reported) {
    ++c.with_usage;
    c.prompt += static_cast<uint64_t>(std::max<int64_t>(0, reported->prompt_tokens));
    c.reported += static_cast<uint64_t>(std::max<int64_t>(0, reported->cached_tokens.value_or(0)));
  }
}

void GatewayMetrics::RecordReload(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(ok ? reloads_ok_ : reloads_failed_);
}

std::map<std::string, GatewayMetrics::ReplicaTraffic> GatewayMetrics::TrafficByReplica() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, ReplicaTraffic> out;
  for (const auto& [k, v] : requests_) out[std::get<0>(k)].requests[std::get<3>(k)] += v;
  for (const auto& [k, v] : upstream_errors_) out[k.first].upstream_errors += v;
  for (const auto& [k, c] : cached_) {
    ReplicaTraffic& t = out[k.first];
    t.cached_predicted += c.predicted;
    t.cached_reported += c.reported;
    t.prompt_tokens += c.prompt;
    t.responses += c.responses;
  }
  return out;
}

std::map<int, uint64_t> GatewayMetrics::RouteErrors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return route_errors_;
}

uint64_t GatewayMetrics::requests_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [k, v] : requests_) n += v;
  return n;
}

DeploymentCounts GatewayMetrics::CountsFor(const std::string& deployment) const {
  std::lock_guard<std::mutex> lock(mu_);
  DeploymentCounts c;
  for (const auto& [k, v] : requests_) {
    const auto& [replica, dep, policy, status] = k;
    if (dep != deployment || status == "cancelled") continue;
    c.requests += v;
    if (status == "5xx" || status == "retried") c.failures += v;
  }
  return c;
}

uint64_t GatewayMetrics::retries_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = 0;
  for (const auto& [k, v] : retries_) n += v;
  return n;
}

std::string RenderServerMetrics(const http::ServerStats& stats) {
  return "# HELP pagoda_gateway_tls_handshake_failures_total TLS handshakes that failed or timed out (plain HTTP "
         "to the TLS port, a bad client hello, a client refusing the certificate).\n"
         "# TYPE pagoda_gateway_tls_handshake_failures_total counter\n"
         "pagoda_gateway_tls_handshake_failures_total " +
         std::to_string(stats.tls_handshake_failures) + "\n";
}

std::string GatewayMetrics::Render(const RoutingTable& table) const {
  std::ostringstream o;
  {
    std::lock_guard<std::mutex> lock(mu_);
    o << "# HELP pagoda_gateway_requests_total Proxied requests by replica, deployment, policy and status class.\n"
         "# TYPE pagoda_gateway_requests_total counter\n";
    for (const auto& [k, v] : requests_) {
      const auto& [replica, deployment, policy, status] = k;
      o << "pagoda_gateway_requests_total{replica=\"" << Esc(replica) << "\",deployment=\"" << Esc(deployment)
        << "\",policy=\"" << Esc(policy) << "\",status=\"" << Esc(status) << "\"} " << v << "\n";
    }
    o << "# HELP pagoda_gateway_retries_total Requests retried on another replica before their first byte.\n"
         "# TYPE pagoda_gateway_retries_total counter\n";
    for (const auto& [d, v] : retries_) o << "pagoda_gateway_retries_total{deployment=\"" << Esc(d) << "\"} " << v << "\n";
    o << "# HELP pagoda_gateway_upstream_errors_total Failed upstream calls by replica and kind.\n"
         "# TYPE pagoda_gateway_upstream_errors_total counter\n";
    for (const auto& [k, v] : upstream_errors_) {
      o << "pagoda_gateway_upstream_errors_total{replica=\"" << Esc(k.first) << "\",kind=\"" << Esc(k.second)
        << "\"} " << v << "\n";
    }
    o << "# HELP pagoda_gateway_route_errors_total Requests the gateway answered itself, by HTTP status.\n"
         "# TYPE pagoda_gateway_route_errors_total counter\n";
    for (const auto& [s, v] : route_errors_) o << "pagoda_gateway_route_errors_total{status=\"" << s << "\"} " << v << "\n";
    const struct {
      const char* name;
      const char* help;
      uint64_t CachedTokens::*field;
    } cached[] = {
        {"pagoda_gateway_predicted_cached_tokens_total", "Prompt tokens the router predicted the replica holds.",
         &CachedTokens::predicted},
        {"pagoda_gateway_reported_cached_tokens_total",
         "Prompt tokens the replica reported cached (usage.prompt_tokens_details.cached_tokens).",
         &CachedTokens::reported},
        {"pagoda_gateway_reported_prompt_tokens_total", "Prompt tokens the replica reported (usage.prompt_tokens).",
         &CachedTokens::prompt},
        {"pagoda_gateway_cache_responses_total", "Answered (2xx) requests counted by the cached-token metrics.",
         &CachedTokens::responses},
        {"pagoda_gateway_cache_responses_with_usage_total", "Of those, the responses that reported usage.",
         &CachedTokens::with_usage},
    };
    for (const auto& m : cached) {
      o << "# HELP " << m.name << " " << m.help << "\n# TYPE " << m.name << " counter\n";
      for (const auto& [k, v] : cached_) {
        o << m.name << "{replica=\"" << Esc(k.first) << "\",deployment=\"" << Esc(k.second) << "\"} " << v.*m.field
          << "\n";
      }
    }
    o << "# HELP pagoda_gateway_pool_fallbacks_total Requests routed outside their class's pool (no replica of "
         "the pool was eligible).\n# TYPE pagoda_gateway_pool_fallbacks_total counter\n";
    for (const auto& [k, v] : pool_fallbacks_) {
      o << "pagoda_gateway_pool_fallbacks_total{model=\"" << Esc(k.first) << "\",class=\"" << Esc(k.second) << "\"} "
        << v << "\n";
    }
    o << "# HELP pagoda_gateway_pd_requests_total Requests to deployments with prefill replicas, by what became "
         "of them (disaggregated, colocated_below_threshold, colocated_no_kv_transfer, prefill_failed).\n"
         "# TYPE pagoda_gateway_pd_requests_total counter\n";
    for (const auto& [k, v] : pd_requests_) {
      o << "pagoda_gateway_pd_requests_total{model=\"" << Esc(k.first) << "\",outcome=\"" << Esc(k.second) << "\"} "
        << v << "\n";
    }
    o << "# TYPE pagoda_gateway_config_reloads_total counter\n"
      << "pagoda_gateway_config_reloads_total{result=\"ok\"} " << reloads_ok_ << "\n"
      << "pagoda_gateway_config_reloads_total{result=\"refused\"} " << reloads_failed_ << "\n";
  }
  RenderHistogram(o, "pagoda_gateway_added_latency_seconds",
                  "Time the gateway spends before forwarding and after receiving.", added_latency_.snapshot());
  RenderHistogram(o, "pagoda_gateway_pd_prefill_seconds",
                  "Prefill legs of disaggregated requests: from the first prefill call to the decode leg's dispatch.",
                  prefill_seconds_.snapshot());
  if (feed_ != nullptr) RenderKvEventFeedMetrics(o, *feed_, table);
  const auto now = std::chrono::steady_clock::now();
  const auto replicas = table.AllReplicas();
  struct Gauge {
    const char* name;
    const char* type;
    const char* help;
    double (*value)(const ReplicaSnapshot&);
  };
  const Gauge gauges[] = {
      {"pagoda_gateway_replica_active_requests", "gauge", "Requests dispatched and not yet ended.",
       [](const ReplicaSnapshot& s) { return static_cast<double>(s.active_requests); }},
      {"pagoda_gateway_replica_active_blocks", "gauge", "KV blocks the gateway estimates its running requests hold.",
       [](const ReplicaSnapshot& s) { return static_cast<double>(s.active_blocks); }},
      {"pagoda_gateway_replica_healthy", "gauge", "1 when active probes pass.",
       [](const ReplicaSnapshot& s) { return s.probe_healthy ? 1.0 : 0.0; }},
      {"pagoda_gateway_replica_circuit_state", "gauge", "Circuit breaker: 0 closed, 1 open, 2 half-open.",
       [](const ReplicaSnapshot& s) { return static_cast<double>(static_cast<int>(s.circuit)); }},
      {"pagoda_gateway_replica_ejections_total", "counter", "Times the replica was ejected (probe or circuit).",
       [](const ReplicaSnapshot& s) { return static_cast<double>(s.ejections); }},
  };
  std::vector<ReplicaSnapshot> snaps;
  for (const auto& r : replicas) snaps.push_back(r->state().Snapshot(now));
  for (const Gauge& g : gauges) {
    o << "# HELP " << g.name << " " << g.help << "\n# TYPE " << g.name << " " << g.type << "\n";
    for (size_t i = 0; i < replicas.size(); ++i) {
      o << g.name << "{replica=\"" << Esc(replicas[i]->id()) << "\",deployment=\"" << Esc(replicas[i]->deployment())
        << "\",zone=\"" << Esc(replicas[i]->config().zone) << "\"} " << Num(g.value(snaps[i])) << "\n";
    }
  }
  o << "# HELP pagoda_gateway_replica_pool 1 for the pool the capacity schedule puts the replica in now.\n"
       "# TYPE pagoda_gateway_replica_pool gauge\n";
  for (const auto& r : replicas) {
    if (r->external()) continue;
    const Pool now_in = r->state().pool.load();
    for (Pool p : kAllPools) {
      o << "pagoda_gateway_replica_pool{model=\"" << Esc(r->model()) << "\",deployment=\"" << Esc(r->deployment())
        << "\",replica=\"" << Esc(r->id()) << "\",pool=\"" << PoolName(p) << "\"} " << (p == now_in ? 1 : 0) << "\n";
    }
  }
  return o.str();
}

}  // namespace pagoda::gateway
