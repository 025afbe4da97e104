// EngineStats: the engine's counters, gauges and latency histograms as one
// value, for the server to render as Prometheus text (names follow vLLM's
// vllm:* metrics: num_requests_running, kv_cache_usage_perc,
// prefix_cache_queries / _hits, prompt_tokens_total, time_to_first_token_seconds ...).
// The engine thread updates its own copy and publishes a snapshot after each
// step; Engine::stats() returns that snapshot on any thread.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/workload_class.h"

namespace pagoda {

// Fixed upper bounds (seconds, or tokens); counts[i] counts observations <= bounds[i]
// and > bounds[i-1] (not cumulative), counts.back() those above every bound.
struct Histogram {
  std::vector<double> bounds;
  std::vector<int64_t> counts;  // bounds.size() + 1
  double sum = 0;
  int64_t count = 0;

  Histogram() = default;
  explicit Histogram(std::span<const double> upper_bounds);
  void Observe(double value);
};

// Bucket bounds modelled on vLLM's for the same metrics.
std::span<const double> TtftBuckets();
std::span<const double> InterTokenBuckets();
std::span<const double> RequestLatencyBuckets();  // e2e and queue time
std::span<const double> IterationTokenBuckets();  // tokens per engine step
std::span<const double> RequestTokenBuckets();    // tokens per request: 1, 2, 5, 10, ... (vLLM's 1-2-5 series)

struct EngineStats {
  // Gauges.
  int64_t requests_running = 0;  // sequences holding a KV slot
  int64_t requests_waiting = 0;  // sequences submitted or preempted, not yet admitted
  double kv_usage = 0;           // blocks held by live sequences / all blocks (0-1)
  int64_t kv_capacity_tokens = 0;  // positions the KV block pool holds (blocks x block size)
  // The two above by EngineRequest::workload_class, indexed by its value
  // (waiting: as of the last step; requests_waiting also counts those
  // submitted since).
  std::array<int64_t, kWorkloadClassCount> requests_running_by_class{};
  std::array<int64_t, kWorkloadClassCount> requests_waiting_by_class{};
  // Counters.
  int64_t prefix_cache_queries = 0;  // prompt tokens looked up (tokens)
  int64_t prefix_cache_hits = 0;     // of those, served from cached blocks
  int64_t prompt_tokens_total = 0;   // prompt tokens of admitted sequences (counted once each)
  int64_t generation_tokens_total = 0;
  int64_t requests_finished_total = 0;
  int64_t requests_cancelled_total = 0;
  int64_t requests_failed_total = 0;    // finished with an error (deadline, ...)
  int64_t requests_rejected_total = 0;  // Submit refused: queue full
  int64_t preemptions_total = 0;        // preempted for KV cache space (the pool ran out mid-step)
  int64_t preemptions_class_total = 0;  // preempted to make room for a higher workload class
  int64_t preemptions_share_total = 0;  // preempted for a tenant under its fair share of the slots
  // Steps of only lower-class work abandoned mid-forward because a real-time
  // request arrived (Model::set_interrupt); their work is redone later.
  int64_t steps_interrupted_total = 0;
  int64_t kv_integrity_failures_total = 0;  // sequences stopped by the KV page integrity check
  // KV offload tiers (docs/KV_OFFLOAD.md), one entry per tier ("disk",
  // "redis"); empty without one.
  struct OffloadTier {
    std::string name;
    int64_t blocks = 0;            // gauge: blocks stored (Redis: written or seen by this process)
    int64_t bytes = 0;             // gauge: their bytes
    int64_t queued = 0;            // gauge: blocks waiting for the writer
    int64_t writes = 0;            // blocks written
    int64_t write_bytes = 0;
    int64_t dropped = 0;           // evicted blocks not written (queue full, already stored, tier down)
    int64_t restored_tokens = 0;   // prompt tokens restored from the tier instead of computed
    int64_t read_bytes = 0;
    double read_seconds = 0;
    int64_t corrupt = 0;           // blocks refused on read or scan (dropped, recomputed)
  };
  std::vector<OffloadTier> kv_offload_tiers;
  // Tokens per engine step (vLLM's iteration_tokens_total histogram): its
  // count is the number of steps, its sum every batched token.
  Histogram iteration_tokens{IterationTokenBuckets()};
  // Histograms (seconds).
  Histogram time_to_first_token{TtftBuckets()};
  Histogram inter_token_latency{InterTokenBuckets()};
  Histogram e2e_request_latency{RequestLatencyBuckets()};
  Histogram request_queue_time{RequestLatencyBuckets()};
  // Per finished sequence (vLLM's request_* histograms): its prompt and
  // generated tokens, the time from its first admission to its first token
  // (prefill) and from there to its last token (decode); per request, the
  // most tokens one of its n sequences generated. Observed however it ended.
  Histogram request_prompt_tokens{RequestTokenBuckets()};
  Histogram request_generation_tokens{RequestTokenBuckets()};
  Histogram request_max_generation_tokens{RequestTokenBuckets()};
  Histogram request_prefill_time{RequestLatencyBuckets()};
  Histogram request_decode_time{RequestLatencyBuckets()};
};

}  // namespace pagoda
