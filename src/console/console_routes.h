// The web console's HTTP face: GET / (index.html) and each embedded asset
// path on the API's router, with their Content-Type, Cache-Control (no-cache
// for index.html, a year and immutable for content-hashed assets), ETag
// (304 on a matching If-None-Match) and a Content-Security-Policy that allows
// this origin only (no remote origin, no inline script). Exact routes only,
// so every other path keeps the API's JSON 404. Shared by `pagoda serve` and
// `pagoda gateway`; docs/CONSOLE.md.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "console/console_asset.h"
#include "http/router.h"

namespace pagoda::console {

// The policy every console response carries.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

// The response for `asset` to `request`: 200 with the body, or 304 when the
// request's If-None-Match names its ETag.
http::Response AssetResponse(const ConsoleAsset& asset, const http::Request& request);

// Adds GET for every asset of `assets` (index.html also at "/").
void AddConsoleRoutes(http::Router& router, std::span<const ConsoleAsset> assets);
// The embedded console (EmbeddedConsoleAssets()).
void AddConsoleRoutes(http::Router& router);

}  // namespace pagoda::console
