#include "gateway/pd_router.h"

#include <algorithm>
#include <vector>

#include "gateway/least_loaded_policy.h"
#include "gateway/router.h"

namespace pagoda::gateway {

const char* PdOutcomeName(PdOutcome o) {
  switch (o) {
    case PdOutcome::kDisaggregated:
      return "disaggregated";
    case PdOutcome::kColocatedBelowThreshold:
      return "colocated_below_threshold";
    case PdOutcome::kPrefillFailed:
      return "prefill_failed";
    case PdOutcome::kColocatedNoKvTransfer:
      return "colocated_no_kv_transfer";
  }
  return "prefill_failed";
}

int64_t UncachedPromptTokens(bool tokenized, size_t prompt_tokens, size_t body_bytes, int64_t predicted_cached) {
  const int64_t prompt = static_cast<int64_t>(tokenized ? prompt_tokens : body_bytes / 4);
  return std::max<int64_t>(0, prompt - std::max<int64_t>(0, predicted_cached));
}

bool HasPrefillReplicas(const Deployment& deployment) {
  return std::any_of(deployment.replicas.begin(), deployment.replicas.end(),
                     [](const auto& r) { return r->config().role == ReplicaRole::kPrefill; });
}

PdDecision DecidePd(const Deployment& deployment, const Replica& decode, int64_t uncached_tokens,
                    int64_t threshold_tokens) {
  if (decode.external() || !HasPrefillReplicas(deployment)) return PdDecision::kNotApplicable;
  if (uncached_tokens <= threshold_tokens) return PdDecision::kColocatedBelowThreshold;
  if (decode.config().kv_transfer.empty()) return PdDecision::kColocatedNoKvTransfer;
  return PdDecision::kDisaggregate;
}

std::shared_ptr<const Replica> PickPrefillReplica(const Deployment& deployment, const Replica& decode,
                                                  const std::set<std::string>& exclude, WorkloadClass workload_class,
                                                  std::chrono::steady_clock::time_point now) {
  std::vector<size_t> in_pool, out_of_pool;
  for (size_t i = 0; i < deployment.replicas.size(); ++i) {
    const Replica& r = *deployment.replicas[i];
    if (!PrefillCapable(r.config().role) || r.id() == decode.id() || exclude.count(r.id()) != 0 ||
        !r.state().Eligible(now)) {
      continue;
    }
    (PoolAccepts(r.state().pool.load(std::memory_order_relaxed), workload_class) ? in_pool : out_of_pool).push_back(i);
  }
  const std::vector<size_t>& idx = in_pool.empty() ? out_of_pool : in_pool;
  if (idx.empty()) return nullptr;
  std::vector<ReplicaView> views;
  views.reserve(idx.size());
  for (size_t i : idx) views.push_back(ViewOf(*deployment.replicas[i], now));
  return deployment.replicas[idx[LeastLoadedIndex(views)]];
}

}  // namespace pagoda::gateway
