#include "gateway/rollout_spec.h"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

namespace pagoda::gateway {
namespace {

constexpr int64_t kMaxIntervalMs = int64_t{24} * 3600 * 1000;
constexpr size_t kMaxSteps = 100;

api::ApiError Bad(std::string_view param, std::string message) { return api::InvalidValue(param, std::move(message)); }

// An integer field within [lo, hi]; absent leaves *out.
std::optional<api::ApiError> ReadInt(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  if (!j.contains(key)) return std::nullopt;
  const auto& v = j[key];
  if (!v.is_number_integer()) return api::InvalidType(key, "integer");
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return Bad(key, std::string(key) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = x;
  return std::nullopt;
}

}  // namespace

Status ValidateRolloutSpec(const RolloutSpec& s) {
  if (s.model.empty()) return InvalidArgument("model: required");
  if (s.version.empty()) return InvalidArgument("version: required");
  if (s.steps.empty() || s.steps.size() > kMaxSteps) return InvalidArgument("steps: 1 to 100 percentages");
  double prev = 0;
  for (double p : s.steps) {
    if (!std::isfinite(p) || p <= prev || p > 100) {
      return InvalidArgument("steps: percentages must increase strictly within (0, 100]");
    }
    prev = p;
  }
  if (s.steps.back() != 100) return InvalidArgument("steps: the last step must be 100");
  if (s.step_interval.count() < 1 || s.step_interval.count() > kMaxIntervalMs) {
    return InvalidArgument("step_interval_ms: must be in [1, 86400000]");
  }
  if (!(s.max_error_rate >= 0 && s.max_error_rate <= 1)) return InvalidArgument("max_error_rate: must be in [0, 1]");
  if (s.probe_interval.count() < 1 || s.probe_interval.count() > kMaxIntervalMs) {
    return InvalidArgument("probe_interval_ms: must be in [1, 86400000]");
  }
  if (s.health_passes < 1 || s.health_passes > 100) return InvalidArgument("health_passes: must be in [1, 100]");
  if (s.max_probe_failures < 1 || s.max_probe_failures > 100) {
    return InvalidArgument("max_probe_failures: must be in [1, 100]");
  }
  if (s.health_timeout.count() < 1 || s.health_timeout.count() > kMaxIntervalMs) {
    return InvalidArgument("health_timeout_ms: must be in [1, 86400000]");
  }
  return Status::Ok();
}

api::ApiResult<RolloutSpec> ParseRolloutSpec(std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return api::InvalidJson("the body is not JSON");
  if (!j.is_object()) return api::InvalidType("", "object");
  static const std::set<std::string> kKeys = {"model",          "version",           "steps",
                                              "step_interval_ms", "max_error_rate",  "probe_interval_ms",
                                              "health_passes",  "max_probe_failures", "health_timeout_ms"};
  for (const auto& [k, v] : j.items()) {
    if (kKeys.count(k) == 0) return api::UnknownParameter(k);
  }
  RolloutSpec s;
  for (const char* key : {"model", "version"}) {
    if (!j.contains(key)) return api::MissingParameter(key);
    if (!j[key].is_string() || j[key].get<std::string>().empty()) return api::InvalidType(key, "non-empty string");
  }
  s.model = j["model"].get<std::string>();
  s.version = j["version"].get<std::string>();
  if (j.contains("steps")) {
    if (!j["steps"].is_array()) return api::InvalidType("steps", "array of numbers");
    s.steps.clear();
    for (const auto& p : j["steps"]) {
      if (!p.is_number()) return api::InvalidType("steps", "array of numbers");
      s.steps.push_back(p.get<double>());
    }
  }
  if (j.contains("max_error_rate")) {
    if (!j["max_error_rate"].is_number()) return api::InvalidType("max_error_rate", "number");
    s.max_error_rate = j["max_error_rate"].get<double>();
  }
  int64_t step_ms = s.step_interval.count(), probe_ms = s.probe_interval.count(),
          timeout_ms = s.health_timeout.count(), passes = s.health_passes, fails = s.max_probe_failures;
  if (auto e = ReadInt(j, "step_interval_ms", 1, kMaxIntervalMs, &step_ms)) return *e;
  if (auto e = ReadInt(j, "probe_interval_ms", 1, kMaxIntervalMs, &probe_ms)) return *e;
  if (auto e = ReadInt(j, "health_timeout_ms", 1, kMaxIntervalMs, &timeout_ms)) return *e;
  if (auto e = ReadInt(j, "health_passes", 1, 100, &passes)) return *e;
  if (auto e = ReadInt(j, "max_probe_failures", 1, 100, &fails)) return *e;
  s.step_interval = std::chrono::milliseconds(step_ms);
  s.probe_interval = std::chrono::milliseconds(probe_ms);
  s.health_timeout = std::chrono::milliseconds(timeout_ms);
  s.health_passes = static_cast<int>(passes);
  s.max_probe_failures = static_cast<int>(fails);
  if (Status st = ValidateRolloutSpec(s); !st.ok()) {
    const std::string& m = st.message();
    return Bad(m.substr(0, m.find(':')), m);
  }
  return s;
}

}  // namespace pagoda::gateway
