// The console's live figures for `pagoda serve`: GET /console/api/stats as
// JSON (docs/CONSOLE.md, "JSON endpoints"), what the dashboard polls each
// second. Counters are cumulative and histograms raw (bounds, per-bucket
// counts, sum, count): the browser takes differences between two polls for
// rates, hit rates and windowed percentiles, as Grafana does over /metrics.
// Ids and counts only: no prompt, output or key. Pure functions; any thread.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "engine/engine_stats.h"

namespace pagoda::server {

// {"bounds": [...], "counts": [...], "sum": s, "count": n}
nlohmann::json HistogramJson(const Histogram& h);
// One engine's figures: requests running / waiting, KV usage and capacity,
// prefix cache, offload tiers, tokens, outcomes, latency histograms.
nlohmann::json EngineStatsJson(const EngineStats& stats);
// The whole answer: {"kind": "serve", "time_ms", "model", "engine": {...}}.
std::string ConsoleStatsJson(const EngineStats& stats, std::string_view model_name, int64_t time_ms);

}  // namespace pagoda::server
