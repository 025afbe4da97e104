#include "server/console_stats.h"

#include <nlohmann/json.hpp>

namespace pagoda::server {

nlohmann::json HistogramJson(const Histogram& h) {
  return {{"bounds", h.bounds}, {"counts", h.counts}, {"sum", h.sum}, {"count", h.count}};
}

nlohmann::json EngineStatsJson(const EngineStats& s) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const EngineStats::OffloadTier& t : s.kv_offload_tiers) {
    tiers.push_back({{"name", t.name},
                     {"hit_tokens", t.restored_tokens},
                     {"blocks", t.blocks},
                     {"bytes", t.bytes},
                     {"writes", t.writes},
                     {"dropped", t.dropped},
                     {"corrupt", t.corrupt}});
  }
  return {{"requests_running", s.requests_running},
          {"requests_waiting", s.requests_waiting},
          {"kv_usage", s.kv_usage},
          {"kv_capacity_tokens", s.kv_capacity_tokens},
          {"prefix_cache_queries", s.prefix_cache_queries},
          {"prefix_cache_hits", s.prefix_cache_hits},
          {"prompt_tokens", s.prompt_tokens_total},
          {"generation_tokens", s.generation_tokens_total},
          {"requests_finished", s.requests_finished_total},
          {"requests_cancelled", s.requests_cancelled_total},
          {"requests_failed", s.requests_failed_total},
          {"requests_rejected", s.requests_rejected_total},
          {"preemptions", s.preemptions_total},
          {"tiers", std::move(tiers)},
          {"ttft_seconds", HistogramJson(s.time_to_first_token)},
          {"itl_seconds", HistogramJson(s.inter_token_latency)},
          {"e2e_seconds", HistogramJson(s.e2e_request_latency)},
          {"queue_seconds", HistogramJson(s.request_queue_time)}};
}

std::string ConsoleStatsJson(const EngineStats& stats, std::string_view model_name, int64_t time_ms) {
  return nlohmann::json{{"kind", "serve"},
                        {"time_ms", time_ms},
                        {"model", std::string(model_name)},
                        {"engine", EngineStatsJson(stats)}}
      .dump();
}

}  // namespace pagoda::server
