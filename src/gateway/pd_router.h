// PdRouter: the decisions of prefill/decode disaggregation (docs/GATEWAY.md,
// "Prefill/decode disaggregation"). The Router picks the decode replica as
// for any request (prefill-role replicas are never candidates); then
// DecidePd says whether this request gets a prefill leg first (the
// deployment has prefill-role replicas, the decode replica receives KV
// transfers, and the uncached prompt is longer than the model's threshold),
// and PickPrefillReplica chooses where that leg runs. A deployment without
// prefill-role replicas never disaggregates, so it routes as before.
// Thread safety: free functions over immutable routing state; any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "base/workload_class.h"
#include "gateway/replica.h"
#include "gateway/routing_table.h"

namespace pagoda::gateway {

// pagoda_gateway_pd_requests_total{outcome}.
enum class PdOutcome : uint8_t {
  kDisaggregated,            // the prefill leg transferred the prompt's KV to the decode replica
  kColocatedBelowThreshold,  // the uncached prompt was short: the decode replica prefills it
  kPrefillFailed,            // no prefill leg succeeded (or none could start): the decode replica prefills
  kColocatedNoKvTransfer,    // the decode replica ("both") has no kv_transfer address
};
const char* PdOutcomeName(PdOutcome o);

enum class PdDecision : uint8_t {
  kNotApplicable,  // no prefill-role replica in the deployment (or an external upstream): route as always
  kColocatedBelowThreshold,
  kColocatedNoKvTransfer,
  kDisaggregate,
};

// The prompt tokens the decode replica would compute: the tokenized prompt's
// length (else the body's bytes / 4) less the tokens the router predicted it
// holds; never negative.
int64_t UncachedPromptTokens(bool tokenized, size_t prompt_tokens, size_t body_bytes, int64_t predicted_cached);

// Whether the deployment disaggregates at all: it has a prefill-role replica.
bool HasPrefillReplicas(const Deployment& deployment);

// The decision for a request routed to `decode` in `deployment`.
PdDecision DecidePd(const Deployment& deployment, const Replica& decode, int64_t uncached_tokens,
                    int64_t threshold_tokens);

// The replica for a prefill leg: the least loaded ((active requests + 1) x
// weight, then active blocks) eligible prefill-capable replica of
// `deployment`, never `decode` nor one in `exclude`; replicas whose capacity
// pool takes `workload_class` first. Null when there is none.
std::shared_ptr<const Replica> PickPrefillReplica(const Deployment& deployment, const Replica& decode,
                                                  const std::set<std::string>& exclude, WorkloadClass workload_class,
                                                  std::chrono::steady_clock::time_point now);

}  // namespace pagoda::gateway
