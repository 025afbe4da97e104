#include "console/console_routes.h"

#include <string>

namespace pagoda::console {
namespace {

// If-None-Match holds `etag`: "*", or a comma-separated list of (possibly
// weak, W/"...") entity tags, compared weakly as RFC 9110 asks for GET.
bool IfNoneMatchHolds(const std::string& header, std::string_view etag) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string::npos) end = header.size();
    std::string_view tag(header.data() + pos, end - pos);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t')) tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag == "*") return true;
    if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
    if (tag == etag) return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

http::Response AssetResponse(const ConsoleAsset& asset, const http::Request& request) {
  http::Response r;
  const std::string* inm = request.headers.Find("If-None-Match");
  if (inm != nullptr && IfNoneMatchHolds(*inm, asset.etag)) {
    r.status = 304;
  } else {
    r.status = 200;
    r.body.assign(reinterpret_cast<const char*>(asset.data.data()), asset.data.size());
  }
  r.content_type = std::string(asset.content_type);
  r.headers.Set("ETag", std::string(asset.etag));
  r.headers.Set("Cache-Control", asset.immutable ? "public, max-age=31536000, immutable" : "no-cache");
  r.headers.Set("Content-Security-Policy", std::string(kContentSecurityPolicy));
  r.headers.Set("X-Content-Type-Options", "nosniff");
  r.headers.Set("Referrer-Policy", "no-referrer");
  r.headers.Set("X-Frame-Options", "DENY");
  return r;
}

void AddConsoleRoutes(http::Router& router, std::span<const ConsoleAsset> assets) {
  for (const ConsoleAsset& a : assets) {
    auto handler = http::SyncHandler([&a](const http::Request& req) { return AssetResponse(a, req); });
    router.Add("GET", std::string(a.path), handler);
    if (a.path == "/index.html") router.Add("GET", "/", handler);
  }
}

void AddConsoleRoutes(http::Router& router) { AddConsoleRoutes(router, EmbeddedConsoleAssets()); }

}  // namespace pagoda::console
