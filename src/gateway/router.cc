#include "gateway/router.h"

#include <algorithm>

namespace pagoda::gateway {
namespace {

api::ApiError Unavailable(std::string message) {
  api::ApiError e;
  e.status = 503;
  e.type = "server_error";
  e.code = "no_healthy_replica";
  e.message = std::move(message);
  return e;
}

api::ApiError UnknownVersion(std::string_view model, std::string_view version) {
  api::ApiError e = api::ModelNotFound(std::string(model) + "@" + std::string(version));
  e.message = "The model '" + std::string(model) + "' has no version '" + std::string(version) + "'.";
  return e;
}

}  // namespace

ReplicaView ViewOf(const Replica& r, std::chrono::steady_clock::time_point now) {
  const ReplicaSnapshot s = r.state().Snapshot(now);
  ReplicaView v;
  v.id = r.id();
  v.zone = r.config().zone;
  v.weight = r.config().weight / s.ramp;  // slow start: costlier while ramping
  v.active_requests = s.active_requests;
  v.active_blocks = s.active_blocks;
  v.kv_events = !r.config().kv_events.empty();
  return v;
}

std::vector<size_t> FilterCandidates(const std::vector<std::shared_ptr<const Replica>>& replicas,
                                     std::string_view zone, const LoadThresholds& thresholds,
                                     const std::set<std::string>& exclude, std::chrono::steady_clock::time_point now,
                                     bool* saturated) {
  std::vector<size_t> in_under, out_under, in_zone, all;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const Replica& r = *replicas[i];
    // A prefill-role replica only ever runs prefill legs (pd_router.h).
    if (!DecodeCapable(r.config().role) || exclude.count(r.id()) != 0 || !r.state().Eligible(now)) continue;
    const bool local = zone.empty() || r.config().zone == zone;
    const bool past = thresholds.Past(r.state().Snapshot(now));
    all.push_back(i);
    if (local) in_zone.push_back(i);
    if (!past) (local ? in_under : out_under).push_back(i);
  }
  *saturated = !all.empty() && in_under.empty() && out_under.empty();
  if (!in_under.empty()) return in_under;
  if (!out_under.empty()) return out_under;
  return in_zone.empty() ? all : in_zone;
}

namespace {

// FilterCandidates among the replicas whose pool takes the request's class;
// when none of those is eligible, among them all (`*fallback` set).
std::vector<size_t> FilterPooled(const Deployment& dep, const RouteRequest& request, const LoadThresholds& thresholds,
                                 std::chrono::steady_clock::time_point now, bool* saturated, bool* fallback) {
  *fallback = false;
  std::set<std::string> outside;
  for (const auto& r : dep.replicas) {
    if (!PoolAccepts(r->state().pool.load(std::memory_order_relaxed), request.workload_class)) outside.insert(r->id());
  }
  if (outside.empty()) return FilterCandidates(dep.replicas, request.zone, thresholds, request.exclude, now, saturated);
  outside.insert(request.exclude.begin(), request.exclude.end());
  std::vector<size_t> idx = FilterCandidates(dep.replicas, request.zone, thresholds, outside, now, saturated);
  if (!idx.empty()) return idx;
  idx = FilterCandidates(dep.replicas, request.zone, thresholds, request.exclude, now, saturated);
  *fallback = !idx.empty();
  return idx;
}

// The policy's pick among `idx` of `replicas`.
RouteDecision Pick(const ModelRoute& model, const Deployment& dep, const std::vector<size_t>& idx,
                   const RouteRequest& request, std::chrono::steady_clock::time_point now) {
  std::vector<ReplicaView> views;
  views.reserve(idx.size());
  for (size_t i : idx) {
    views.push_back(ViewOf(*dep.replicas[i], now));
  }
  RouteInput in;
  in.model = dep.key;
  in.tokens = request.tokens;
  in.prompt_text = request.prompt_text;
  in.session_key = request.session_key;
  in.block_size = model.config.block_size;
  in.cache_scope_digest = request.cache_scope_digest;
  const RouteChoice choice = model.policy->Pick(in, views);
  const size_t chosen = choice.index < views.size() ? choice.index : 0;
  model.policy->OnDispatched(in, views[chosen]);
  RouteDecision d;
  d.replica = dep.replicas[idx[chosen]];
  d.deployment = dep.key;
  d.policy = model.config.policy;
  d.blocks = EstimateBlocks(request.prompt_tokens, request.max_tokens, model.config.block_size);
  d.predicted_cached_tokens = choice.predicted_cached_tokens;
  return d;
}

}  // namespace

api::ApiResult<RouteDecision> Route(const RoutingTable& table, const RouteRequest& request,
                                    std::chrono::steady_clock::time_point now) {
  const AliasConfig* alias = table.FindAlias(request.model);
  std::string_view name, version;
  if (alias != nullptr) {
    name = alias->model;
    version = alias->version;
  } else {
    std::tie(name, version) = SplitPinned(request.model);
  }
  const ModelRoute* model = table.FindModel(name);
  if (model == nullptr) return api::ModelNotFound(request.model);
  const GatewayConfig& c = table.config();
  const LoadThresholds thresholds{c.load_threshold_requests, c.load_threshold_blocks};
  std::vector<size_t> order;  // deployment indices to try, in order
  if (!version.empty()) {
    const Deployment* pinned = model->FindDeployment(version);
    if (pinned == nullptr) return UnknownVersion(name, version);
    order.push_back(static_cast<size_t>(pinned - model->deployments.data()));
  } else {
    order = table.DeploymentOrder(*model);
    // A retry tries the other versions first (a failing canary must not eat the retry).
    if (order.size() > 1 && model->deployments[order.front()].key == request.avoid_deployment) {
      std::rotate(order.begin(), order.begin() + 1, order.end());
    }
  }
  const Deployment* dep = nullptr;
  bool saturated = false, pool_fallback = false;
  std::vector<size_t> idx;
  for (size_t d : order) {
    dep = &model->deployments[d];
    idx = FilterPooled(*dep, request, thresholds, now, &saturated, &pool_fallback);
    if (!idx.empty()) break;
  }
  if (idx.empty()) dep = &model->deployments[order.front()];
  const bool fallback_ok = alias != nullptr && !alias->self_hosted_only && !alias->fallback.empty();
  if (fallback_ok && (idx.empty() || saturated)) {
    auto upstream = table.FindUpstream(alias->fallback);
    if (upstream && request.exclude.count(upstream->id()) == 0 && upstream->state().Eligible(now)) {
      RouteDecision d;
      d.replica = upstream;
      d.deployment = upstream->deployment();
      d.policy = "fallback";
      return d;
    }
  }
  if (idx.empty()) {
    if (alias != nullptr && alias->self_hosted_only) {
      return Unavailable("No self-hosted replica of '" + std::string(request.model) +
                         "' is available, and this model is restricted to self-hosted replicas.");
    }
    return Unavailable("No healthy replica of '" + std::string(request.model) + "' is available.");
  }
  RouteDecision d = Pick(*model, *dep, idx, request, now);
  d.pool_fallback = pool_fallback;
  return d;
}

std::vector<std::string> ServedModelNames(const RoutingTable& table) {
  std::vector<std::string> out;
  for (const auto& m : table.config().models) {
    out.push_back(m.name);
    for (const auto& d : m.deployments) out.push_back(m.name + "@" + d.version);
  }
  for (const auto& a : table.config().aliases) out.push_back(a.name);
  return out;
}

}  // namespace pagoda::gateway
