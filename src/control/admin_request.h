// Reading admin API requests: JSON body fields with their types and ranges,
// query parameters, path ids and time bounds. Every reader returns
// std::nullopt on success or the OpenAI-style ApiError (400, naming the
// field in `param`) to answer with. Nothing here touches a store.
//
// Conventions: a field that is absent or JSON null leaves the output
// unchanged and sets *present to false; unknown body fields and unknown or
// repeated query parameters are refused, so a typo never passes silently.
// Values are echoed in messages only when they are safe ids or numbers:
// a misplaced key secret must never come back in an error.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace pagoda::control {

using MaybeError = std::optional<api::ApiError>;

// 400 unknown_parameter for the first field of `body` not in `allowed`.
MaybeError CheckFields(const nlohmann::json& body, std::initializer_list<std::string_view> allowed);

// String of valid UTF-8 without control bytes, at most `max_bytes`.
MaybeError ReadString(const nlohmann::json& body, std::string_view field, std::string* out, bool* present = nullptr,
                      size_t max_bytes = 256);
// Integer in [min, max]; 5.0 is a type error.
MaybeError ReadInt(const nlohmann::json& body, std::string_view field, int64_t min, int64_t max, int64_t* out,
                   bool* present = nullptr);
// Finite number in [min, max] ((min, max] when min_exclusive).
MaybeError ReadNumber(const nlohmann::json& body, std::string_view field, double min, double max, bool min_exclusive,
                      double* out, bool* present = nullptr);
MaybeError ReadBool(const nlohmann::json& body, std::string_view field, bool* out, bool* present = nullptr);
// Array of non-empty strings (each as ReadString), at most `max_items`.
MaybeError ReadStringList(const nlohmann::json& body, std::string_view field, std::vector<std::string>* out,
                          bool* present = nullptr, size_t max_items = 1024);

// [a-z0-9_-]{1,64}: the shape of tenant ids and key ids.
bool IsSlug(std::string_view s);
// 400 invalid_value naming `field` unless IsSlug(value); never echoes the value.
MaybeError CheckSlug(std::string_view field, std::string_view value);

// "%41" -> "A", '+' -> ' '; nullopt on a malformed escape.
std::optional<std::string> PercentDecode(std::string_view s);

// Decoded query parameters. 400 on an unknown or repeated name, a malformed
// escape, or a value that is not valid UTF-8.
using QueryParams = std::map<std::string, std::string, std::less<>>;
api::ApiResult<QueryParams> ParseQuery(std::string_view query, std::initializer_list<std::string_view> allowed);

// A time bound: unix seconds ("1767225600") or a UTC date ("2026-01-01").
// Returns unix milliseconds. A date as the end of a range (`end_of_range`)
// means the end of that day, so from=D&to=D covers the whole day D.
api::ApiResult<int64_t> ParseTimeParam(std::string_view param, std::string_view value, bool end_of_range);

// The errors admin handlers answer with besides the 400s above.
api::ApiError NotFoundError(std::string message, std::string_view code, std::string_view param = {});  // 404
api::ApiError ConflictError(std::string message, std::string_view code);                                // 409

}  // namespace pagoda::control
