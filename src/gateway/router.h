// Router: one request -> one replica (or external upstream). Resolves the
// model name (alias, model, model@version; unknown -> 404), picks the
// deployment (pinned, else by traffic weight / the current version; an
// unpinned request whose pick has no eligible replica, or that retries away
// from `avoid_deployment`, falls back to the model's other deployments that
// carry traffic, never to a pinned-only one), filters
// its replicas (never a prefill-role one: those only run prefill legs;
// eligible = probes pass and the circuit admits; the request's
// zone first; other zones only when no in-zone replica is eligible or every
// in-zone one is past the load threshold; replicas past the threshold only
// when nothing else is left), then lets the model's policy rank the rest.
// Aliases: self_hosted_only never reaches an upstream (503 instead); an alias
// with a fallback reaches its upstream only when every own replica is
// ineligible or past the threshold. Capacity schedules: within a deployment
// only the replicas whose current pool takes the request's class are
// candidates; when none of those is eligible, every replica is (a schedule
// never fails a request; RouteDecision::pool_fallback says so).
// Thread safety: Route from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "base/workload_class.h"
#include "gateway/replica.h"
#include "gateway/routing_policy.h"
#include "gateway/routing_table.h"

namespace pagoda::gateway {

struct RouteRequest {
  std::string_view model;        // as the client sent it
  std::string_view zone;         // the request's zone (header, else the gateway's)
  std::string_view session_key;  // sticky key; "" when none
  std::string_view prompt_text;  // for approximate policies
  std::span<const int32_t> tokens;  // the prompt as the engine will see it (RequestTokenizer); empty if untokenized
  int64_t prompt_tokens = 0;     // tokens.size() when tokenized, else estimated
  int64_t max_tokens = 0;
  std::set<std::string> exclude;  // replica ids already tried (retries)
  std::string avoid_deployment;   // "model@version" that just failed this request (unpinned retries go elsewhere first)
  uint64_t cache_scope_digest = 0;  // RouteInput::cache_scope_digest
  WorkloadClass workload_class = WorkloadClass::kInteractive;  // RequestClass; picks the pool
};

struct RouteDecision {
  std::shared_ptr<const Replica> replica;
  std::string deployment;     // "model@version", or "upstream:<name>"
  std::string policy;         // the policy that picked it ("fallback" for an alias's upstream)
  int64_t blocks = 0;         // the load guard's block estimate
  int64_t predicted_cached_tokens = 0;
  // No replica whose pool takes the request's class was eligible: routed
  // outside the pools (pagoda_gateway_pool_fallbacks_total).
  bool pool_fallback = false;
};

struct LoadThresholds {
  int64_t requests = 0;  // 0: none
  int64_t blocks = 0;    // 0: none
  bool Past(const ReplicaSnapshot& s) const {
    return (requests > 0 && s.active_requests >= requests) || (blocks > 0 && s.active_blocks >= blocks);
  }
};

// The replicas of `replicas` to hand the policy, by the zone and load rules.
// `saturated` is set when every eligible replica is past the threshold; the
// result is empty when none is eligible.
// The replica as a policy sees it now (its weight raised while it ramps up
// after re-admission); borrows `r`'s strings.
ReplicaView ViewOf(const Replica& r, std::chrono::steady_clock::time_point now);

// Prefill-role replicas are never candidates.
std::vector<size_t> FilterCandidates(const std::vector<std::shared_ptr<const Replica>>& replicas,
                                     std::string_view zone, const LoadThresholds& thresholds,
                                     const std::set<std::string>& exclude, std::chrono::steady_clock::time_point now,
                                     bool* saturated);

api::ApiResult<RouteDecision> Route(const RoutingTable& table, const RouteRequest& request,
                                    std::chrono::steady_clock::time_point now);

// The names /v1/models lists: models, model@version, aliases.
std::vector<std::string> ServedModelNames(const RoutingTable& table);

}  // namespace pagoda::gateway
