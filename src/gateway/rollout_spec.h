// RolloutSpec: what one red-black rollout is asked to do, as a value with its
// defaults, and its parsing from the admin API's JSON body
// (POST /admin/rollouts). The new version takes `steps` percent of the
// model's unpinned traffic in turn; each step is watched for `step_interval`.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "base/status.h"

namespace pagoda::gateway {

struct RolloutSpec {
  std::string model;
  std::string version;                    // the new version (a deployment of `model`)
  std::vector<double> steps = {10, 25, 50, 100};  // percent; increasing, in (0, 100], ending at 100
  std::chrono::milliseconds step_interval{30'000};  // how long each step is watched
  double max_error_rate = 0.05;           // failed / routed attempts of the new version over a step window
  std::chrono::milliseconds probe_interval{500};   // the controller's own /health probes of the new replicas
  int health_passes = 2;                  // passing probes in a row every new replica needs before traffic moves
  int max_probe_failures = 2;             // failing probes in a row of any new replica: health check fails
  std::chrono::milliseconds health_timeout{60'000};  // to pass health before any traffic moves
};

// Bounds and shapes (steps, intervals, rates); model/version existence is the controller's.
Status ValidateRolloutSpec(const RolloutSpec& spec);

// {"model", "version", "steps"?, "step_interval_ms"?, "max_error_rate"?,
//  "probe_interval_ms"?, "health_passes"?, "max_probe_failures"?,
//  "health_timeout_ms"?}. Errors (400): not JSON, wrong types, unknown keys,
// values out of bounds, each naming its field.
api::ApiResult<RolloutSpec> ParseRolloutSpec(std::string_view body);

}  // namespace pagoda::gateway
