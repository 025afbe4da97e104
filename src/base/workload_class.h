// WorkloadClass: the traffic classes that share one capacity, most urgent
// first: realtime (latency-bound streaming: voice, video), interactive (chat
// and agents; the default) and batch (deadlines of hours: the Batch API and
// `service_tier: "flex"`). The engine admits a lower class only into the
// capacity higher ones leave free and preempts it when they need more; the
// control plane decides which classes a key may use (docs/SCHEDULING.md,
// docs/BATCH.md). Values order by urgency: a larger value is more urgent.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda {

enum class WorkloadClass : uint8_t {
  kBatch = 0,
  kInteractive = 1,
  kRealtime = 2,
};

inline constexpr int kWorkloadClassCount = 3;

// "batch" | "interactive" | "realtime".
const char* WorkloadClassName(WorkloadClass c);

// Our names, and OpenAI's service_tier values mapped onto them: "flex" ->
// batch, "default" -> interactive, "priority" and "scale" -> realtime.
// "auto" and anything else: nullopt ("auto" means "whatever the key
// defaults to": callers treat it as absent).
std::optional<WorkloadClass> ParseWorkloadClass(std::string_view name);

// What OpenAI's `service_tier` response field says for a class: "flex",
// "default" or "priority".
const char* OpenAiServiceTier(WorkloadClass c);

}  // namespace pagoda
