// Pool: which traffic a replica takes at the moment, as its deployment's
// capacity schedule says (capacity_schedule.h): "realtime" takes realtime
// and interactive requests, "batch" takes batch requests, "shared" (the
// default when no schedule applies) takes every class.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/workload_class.h"

namespace pagoda::gateway {

enum class Pool : uint8_t {
  kShared = 0,
  kRealtime = 1,
  kBatch = 2,
};

inline constexpr Pool kAllPools[] = {Pool::kShared, Pool::kRealtime, Pool::kBatch};

// "shared" | "realtime" | "batch".
const char* PoolName(Pool p);
std::optional<Pool> ParsePool(std::string_view name);

// Whether a replica in `pool` may take a request of class `c`.
bool PoolAccepts(Pool pool, WorkloadClass c);

}  // namespace pagoda::gateway
