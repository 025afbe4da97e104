// Proxy: relays one client request to the replica the Router picks, through
// the asynchronous UpstreamClient. SSE responses pass through event by event;
// others are relayed whole. A failure before the first byte reached the
// client (connect error, timeout, 5xx, garbage) is retried once on another
// replica (an unpinned one preferably on another version of the model, so a
// failing rollout step costs no request); the prompt is tokenized once (the
// model's RequestTokenizer) and the tokens route every attempt; later
// failures end the stream with an SSE error event; a client that leaves
// cancels the upstream call at once. The load guard is taken at dispatch and
// released when the exchange ends, however it ends. Passive
// health: connection errors, timeouts and 5xx count against the replica's
// circuit. Prefill/decode disaggregation: for a deployment with prefill-role
// replicas, a request whose uncached prompt passes the model's threshold
// first runs a prefill leg (prefill_leg.h) that ships its KV to the routed
// (decode) replica, then goes there as usual; a failed prefill only means
// the decode replica prefills itself. Thread safety: Start from any thread;
// the exchange then lives on the upstream client's I/O threads and the
// server's cancel callback.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "control/control_plane.h"
#include "gateway/gateway_metrics.h"
#include "gateway/routing_table.h"
#include "http/message.h"
#include "http/response_writer.h"
#include "http/upstream_client.h"

namespace pagoda::gateway {

struct ProxyContext {
  http::UpstreamClient* client = nullptr;
  GatewayMetrics* metrics = nullptr;
  // Keys, limits and metering (gateway/request_meter.h); nullptr: open gateway.
  control::ControlPlane* control = nullptr;
};

// Headers that name what served a response.
inline constexpr const char* kDeploymentHeader = "x-pagoda-deployment";
inline constexpr const char* kReplicaHeader = "x-pagoda-replica";
// A disaggregated response: the replica that prefilled the prompt (x-pagoda-replica decoded it).
inline constexpr const char* kPrefillReplicaHeader = "x-pagoda-prefill-replica";
// The prompt tokens the router predicted the chosen replica holds in its
// prefix cache (cache_aware; 0 for the other policies).
inline constexpr const char* kPredictedCachedHeader = "x-pagoda-predicted-cached-tokens";

// Proxies `request` (an OpenAI-style /v1/* call) with `table`; answers on `writer`.
void ProxyRequest(const ProxyContext& ctx, std::shared_ptr<const RoutingTable> table, const http::Request& request,
                  std::shared_ptr<http::ResponseWriter> writer);

// The request headers to forward: hop-by-hop ones, Host, Content-Length and
// any tenant headers a client sent (only the gateway's signed ones may
// reach a replica) removed; Authorization removed for external upstreams
// (they get their own key) and, with `strip_auth`, for every upstream (a
// tenant's key never leaves the gateway).
http::Headers ForwardHeaders(const http::Headers& in, bool external, bool strip_auth = false);

}  // namespace pagoda::gateway
