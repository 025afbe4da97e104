#include "base/workload_class.h"

namespace pagoda {

const char* WorkloadClassName(WorkloadClass c) {
  switch (c) {
    case WorkloadClass::kBatch:
      return "batch";
    case WorkloadClass::kInteractive:
      return "interactive";
    case WorkloadClass::kRealtime:
      return "realtime";
  }
  return "interactive";
}

std::optional<WorkloadClass> ParseWorkloadClass(std::string_view name) {
  if (name == "batch" || name == "flex") return WorkloadClass::kBatch;
  if (name == "interactive" || name == "default") return WorkloadClass::kInteractive;
  if (name == "realtime" || name == "priority" || name == "scale") return WorkloadClass::kRealtime;
  return std::nullopt;
}

const char* OpenAiServiceTier(WorkloadClass c) {
  switch (c) {
    case WorkloadClass::kBatch:
      return "flex";
    case WorkloadClass::kInteractive:
      return "default";
    case WorkloadClass::kRealtime:
      return "priority";
  }
  return "default";
}

}  // namespace pagoda
