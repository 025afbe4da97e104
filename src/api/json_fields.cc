#include "api/json_fields.h"

#include <cmath>
#include <limits>

#include "api/json_text.h"

namespace pagoda::api::internal {

namespace {

std::string FormatNumber(double x) {
  std::string s = std::to_string(x);
  // to_string gives six decimals; trim trailing zeros for readable messages.
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

MaybeError ReadBool(const nlohmann::json& v, std::string_view param, bool* out) {
  if (!v.is_boolean()) return InvalidType(param, "a boolean");
  *out = v.get<bool>();
  return std::nullopt;
}

MaybeError ReadInt(const nlohmann::json& v, std::string_view param, int64_t min, int64_t max, int64_t* out) {
  if (!v.is_number_integer()) return InvalidType(param, "an integer");
  int64_t x;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    x = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                        : static_cast<int64_t>(u);
  } else {
    x = v.get<int64_t>();
  }
  if (x < min) {
    return InvalidValue(param, "Invalid '" + std::string(param) + "': expected a value >= " + std::to_string(min) +
                                   ", but got " + std::to_string(x) + " instead.");
  }
  if (x > max) {
    return InvalidValue(param, "Invalid '" + std::string(param) + "': expected a value <= " + std::to_string(max) +
                                   ", but got " + v.dump() + " instead.");
  }
  *out = x;
  return std::nullopt;
}

MaybeError ReadNumber(const nlohmann::json& v, std::string_view param, double min, double max, bool min_exclusive,
                      double* out) {
  if (!v.is_number()) return InvalidType(param, "a number");
  const double x = v.get<double>();
  const bool below = min_exclusive ? !(x > min) : !(x >= min);
  if (!std::isfinite(x) || below || !(x <= max)) {
    return InvalidValue(param, "Invalid '" + std::string(param) + "': expected a number in " +
                                   (min_exclusive ? "(" : "[") + FormatNumber(min) + ", " + FormatNumber(max) +
                                   "], but got " + FormatNumber(x) + " instead.");
  }
  *out = x;
  return std::nullopt;
}

MaybeError ReadString(const nlohmann::json& v, std::string_view param, std::string* out) {
  if (!v.is_string()) return InvalidType(param, "a string");
  const auto& s = v.get_ref<const std::string&>();
  if (!IsValidUtf8(s)) return InvalidUtf8(param);
  *out = s;
  return std::nullopt;
}

std::string Path(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string Path(std::string_view parent, std::string_view key) {
  return std::string(parent) + "." + std::string(key);
}

}  // namespace pagoda::api::internal
