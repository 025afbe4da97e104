// Typed readers for request fields (internal to src/api). Each returns
// std::nullopt on success and the ApiError naming `param` otherwise. A JSON
// null is handled by the callers (OpenAI treats null as "absent").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace pagoda::api::internal {

using MaybeError = std::optional<ApiError>;

MaybeError ReadBool(const nlohmann::json& v, std::string_view param, bool* out);
// Integer in [min, max]; a float such as 5.0 is a type error.
MaybeError ReadInt(const nlohmann::json& v, std::string_view param, int64_t min, int64_t max, int64_t* out);
// Finite number in [min, max] (or (min, max] when min_exclusive).
MaybeError ReadNumber(const nlohmann::json& v, std::string_view param, double min, double max, bool min_exclusive,
                      double* out);
// String with valid UTF-8 (the body was checked as a whole, but \u escapes can
// still produce what the body check cannot see).
MaybeError ReadString(const nlohmann::json& v, std::string_view param, std::string* out);

// "messages[3].content"
std::string Path(std::string_view parent, size_t index);
std::string Path(std::string_view parent, std::string_view key);

}  // namespace pagoda::api::internal
