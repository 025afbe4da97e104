// PrefillLeg: the first leg of a disaggregated request (docs/GATEWAY.md,
// "Prefill/decode disaggregation"). It POSTs the client's request, cut down
// to a one-token, non-streaming prefill with kv_transfer_params naming the
// decode replica's KV-transfer address, to a prefill replica
// (PickPrefillReplica); the replica answers once the decode replica has
// acknowledged the prompt's KV blocks (or the transfer failed). A failed
// call (connect error, timeout, 5xx, an answer without a readable
// kv_transfer_params) is tried once more on another prefill replica; a 4xx
// (the request's own fault) and a transfer the replica reports failed are
// not. Whatever happens, the report says so and the proxy sends the decode
// leg: a prefill failure only costs the decode replica its own prefill.
// Each call counts as load on its replica (LoadGuard) and in its circuit
// breaker like any proxied call.
// Thread safety: Start once from any thread; Cancel from any thread; `done`
// runs exactly once, on an upstream I/O thread, or inside Start when no
// call could be made.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/workload_class.h"
#include "gateway/gateway_metrics.h"
#include "gateway/pd_router.h"
#include "gateway/replica.h"
#include "gateway/routing_table.h"
#include "http/upstream_client.h"

namespace pagoda::gateway {

// kv_transfer_params of a prefill leg's request.
struct KvTransferRequest {
  std::string remote_addr;  // the decode replica's kv_transfer "host:port"
  std::string transfer_id;  // random hex, one per call
};

// The prefill leg's body: the client's with "stream": false, "max_tokens":
// 1, "n": 1, no max_completion_tokens, stream_options, logprobs or
// top_logprobs, "model" = `served_model` (when non-empty) and
// "kv_transfer_params": {"do_remote_decode": true, "remote_addr",
// "transfer_id"}. Error: the body is not a JSON object.
Result<std::string> PrefillBody(std::string_view client_body, std::string_view served_model,
                                const KvTransferRequest& transfer);

// The prefill replica's account of the transfer (its answer's kv_transfer_params).
struct KvTransferResult {
  std::string transfer_id;
  std::string status;  // "ok" | "failed"
  int64_t blocks = 0;
  int64_t bytes = 0;
  std::string error;  // "" when none
  bool ok() const { return status == "ok"; }
};

// Reads a 2xx answer's kv_transfer_params. Errors: not JSON, no
// kv_transfer_params object, a transfer_id other than `transfer_id`, a
// status other than "ok" or "failed".
Result<KvTransferResult> ParseKvTransferResult(std::string_view body, std::string_view transfer_id);

struct PrefillLegPlan {
  std::shared_ptr<const RoutingTable> table;  // keeps `deployment` alive
  const Deployment* deployment = nullptr;
  std::shared_ptr<const Replica> decode;  // never a prefill replica of this request
  std::string client_body;
  std::string served_model;
  WorkloadClass workload_class = WorkloadClass::kInteractive;
  int64_t blocks = 0;  // the load guard's estimate on the prefill replica
  std::chrono::milliseconds timeout{30'000};  // per call (pd_prefill_timeout_ms)
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();  // the request's
};

struct PrefillLegReport {
  PdOutcome outcome = PdOutcome::kPrefillFailed;  // kDisaggregated or kPrefillFailed
  bool cancelled = false;                         // Cancel() ended it
  std::shared_ptr<const Replica> replica;         // the replica that prefilled (disaggregated); else null
  KvTransferResult transfer;                      // disaggregated: what moved
  std::string failure;                            // prefill_failed: why (logs; no bodies)
  int calls = 0;                                  // prefill calls made (0: no replica could be called)
  double seconds = 0;                             // from Start to the report
};

class PrefillLeg : public std::enable_shared_from_this<PrefillLeg> {
 public:
  using Clock = std::chrono::steady_clock;
  // The request to send `replica` with `body`: endpoint, the headers a
  // proxied request forwards (signed tenant headers included), timeouts.
  using RequestFor = std::function<http::UpstreamRequest(const Replica& replica, std::string body)>;
  using Done = std::function<void(const PrefillLegReport& report)>;

  PrefillLeg(http::UpstreamClient* client, GatewayMetrics* metrics, PrefillLegPlan plan, RequestFor request_for);

  void Start(Done done);
  // Ends the call in flight (the report says cancelled); idempotent.
  void Cancel();

 private:
  void Next();  // picks a replica and starts a call, or reports
  void OnCallDone(const http::UpstreamOutcome& outcome);
  void Report(PdOutcome outcome, std::string failure, KvTransferResult transfer = {}, bool cancelled = false);

  http::UpstreamClient* const client_;
  GatewayMetrics* const metrics_;
  const PrefillLegPlan plan_;
  const RequestFor request_for_;
  Done done_;
  Clock::time_point started_;
  // Per call (one call runs at a time; its callbacks one at a time).
  std::set<std::string> tried_;
  int calls_ = 0;
  std::shared_ptr<const Replica> replica_;
  LoadGuard guard_;
  std::string transfer_id_;
  int status_ = 0;
  std::string body_;
  bool overflow_ = false;
  std::string last_failure_;

  std::mutex mu_;  // guards call_, generation_, cancelled_ (Cancel runs on other threads)
  std::shared_ptr<http::UpstreamCall> call_;
  uint64_t generation_ = 0;  // calls started
  bool cancelled_ = false;
};

}  // namespace pagoda::gateway
