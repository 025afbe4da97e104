#include "gateway/pool.h"

namespace pagoda::gateway {

const char* PoolName(Pool p) {
  switch (p) {
    case Pool::kShared:
      return "shared";
    case Pool::kRealtime:
      return "realtime";
    case Pool::kBatch:
      return "batch";
  }
  return "shared";
}

std::optional<Pool> ParsePool(std::string_view name) {
  for (Pool p : kAllPools) {
    if (name == PoolName(p)) return p;
  }
  return std::nullopt;
}

bool PoolAccepts(Pool pool, WorkloadClass c) {
  switch (pool) {
    case Pool::kShared:
      return true;
    case Pool::kRealtime:
      return c != WorkloadClass::kBatch;
    case Pool::kBatch:
      return c == WorkloadClass::kBatch;
  }
  return true;
}

}  // namespace pagoda::gateway
