// Bearer-token authentication. The key is compared in constant time and is
// never logged.
#pragma once

#include <optional>
#include <string_view>

#include "http/message.h"

namespace pagoda::http {

// Equal contents, in time that depends only on the lengths.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// True when the request carries "Authorization: Bearer <expected_key>".
// An empty expected_key accepts every request (auth disabled).
bool BearerTokenMatches(const Request& request, std::string_view expected_key);

// A Router guard: 401 {"error": {... "code": "invalid_api_key"}} unless the
// bearer token matches.
std::optional<Response> RequireBearerToken(const Request& request, std::string_view expected_key);

}  // namespace pagoda::http
