// Prometheus text exposition (format 0.0.4) of EngineStats, with `pagoda:`
// names that mirror vLLM's `vllm:` metrics so dashboards carry over.
// Histograms are written with cumulative buckets, `+Inf`, `_sum`, `_count`.
#pragma once

#include <string>
#include <string_view>

#include "engine/engine_stats.h"

namespace pagoda::server {

std::string RenderPrometheus(const EngineStats& stats, std::string_view model_name);

}  // namespace pagoda::server
