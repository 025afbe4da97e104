// ProbeHealth: one active health probe, GET <base>/health on a replica
// through the asynchronous UpstreamClient; 200 within `timeout` passes.
// Shared by the HealthChecker (periodic rounds) and the rollout controller
// (the new version's replicas, before and while traffic moves to them).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "gateway/replica.h"
#include "http/upstream_client.h"

namespace pagoda::gateway {

// A bodiless request to `replica` for `path` (under its base path) whose
// connect, first byte, idle time and total all end within `timeout`.
http::UpstreamRequest ReplicaGet(const Replica& replica, const std::string& path, std::chrono::milliseconds timeout);

// `done(ok, why)` runs once on one of the client's threads (or at once when
// the client is shutting down), unless the call is cancelled; `why` names
// the failure for logs ("" when ok).
void ProbeHealth(http::UpstreamClient& client, const Replica& replica, std::chrono::milliseconds timeout,
                 std::function<void(bool ok, const std::string& why)> done);

}  // namespace pagoda::gateway
