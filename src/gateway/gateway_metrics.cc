#include "gateway/gateway_metrics.h"

#include <cstdio>
#include <sstream>

namespace pagoda::gateway {
namespace {

std::string Esc(const std::string& s) { return EscapeLabelValue(s); }

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace

std::string EscapeLabelValue(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

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

void GatewayMetrics::RecordAddedLatency(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t b = 0;
  while (b < kBuckets.size() && seconds > kBuckets[b]) ++b;
  ++latency_buckets_[b];
  latency_sum_ += seconds;
  ++latency_count_;
}

void GatewayMetrics::RecordReload(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(ok ? reloads_ok_ : reloads_failed_);
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
    o << "# HELP pagoda_gateway_added_latency_seconds Time the gateway spends before forwarding and after receiving.\n"
         "# TYPE pagoda_gateway_added_latency_seconds histogram\n";
    uint64_t cum = 0;
    for (size_t b = 0; b < kBuckets.size(); ++b) {
      cum += latency_buckets_[b];
      o << "pagoda_gateway_added_latency_seconds_bucket{le=\"" << Num(kBuckets[b]) << "\"} " << cum << "\n";
    }
    cum += latency_buckets_[kBuckets.size()];
    o << "pagoda_gateway_added_latency_seconds_bucket{le=\"+Inf\"} " << cum << "\n"
      << "pagoda_gateway_added_latency_seconds_sum " << Num(latency_sum_) << "\n"
      << "pagoda_gateway_added_latency_seconds_count " << latency_count_ << "\n";
    o << "# TYPE pagoda_gateway_config_reloads_total counter\n"
      << "pagoda_gateway_config_reloads_total{result=\"ok\"} " << reloads_ok_ << "\n"
      << "pagoda_gateway_config_reloads_total{result=\"refused\"} " << reloads_failed_ << "\n";
  }
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
  return o.str();
}

}  // namespace pagoda::gateway
