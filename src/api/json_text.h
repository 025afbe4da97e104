// JSON text in and out of the API layer: strict UTF-8 validation, bounded
// nesting, and serialization that can never throw on bad bytes.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace pagoda::api {

// Well-formed UTF-8 per RFC 3629: no overlong forms, no surrogates, <= U+10FFFF.
bool IsValidUtf8(std::string_view s);

// Nesting deeper than this is rejected before parsing (a body of 8 MiB of '['
// must not cost a deep recursion anywhere).
inline constexpr int kMaxJsonDepth = 64;

// Parses a request body that must be one JSON object. Errors (400): invalid
// UTF-8, nesting past kMaxJsonDepth, malformed JSON, a top level that is not
// an object.
ApiResult<nlohmann::json> ParseJsonObject(std::string_view body);

// Compact dump; invalid UTF-8 in strings becomes U+FFFD instead of throwing.
std::string DumpJson(const nlohmann::json& j);

}  // namespace pagoda::api
