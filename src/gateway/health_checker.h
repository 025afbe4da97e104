// HealthChecker: active probes. Every interval it sends GET /health to each
// replica of the current routing table (not to external upstreams, which are
// judged passively) through the UpstreamClient, and feeds the results to the
// replicas' state (ejection on failure, re-admission with slow start after
// enough passing probes). Owns one timer thread that only starts calls.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "gateway/routing_table.h"
#include "http/upstream_client.h"

namespace pagoda::gateway {

class HealthChecker {
 public:
  using TableSource = std::function<std::shared_ptr<const RoutingTable>()>;
  HealthChecker(http::UpstreamClient* client, TableSource tables);
  ~HealthChecker();  // Stop()

  void Start();
  void Stop();
  // One round now (tests); results arrive asynchronously.
  void ProbeAll();

 private:
  void Loop();

  http::UpstreamClient* client_;
  TableSource tables_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace pagoda::gateway
