// The web console on `pagoda serve`: its embedded pages at / and the JSON
// the dashboard polls (GET /console/api/stats). The JSON sits behind the same
// key check as /v1/ (openai_server.cc installs the guard on both prefixes).
#include <chrono>

#include "console/console_routes.h"
#include "server/console_stats.h"
#include "server/routes.h"

namespace pagoda::server {

void AddConsoleRoutes(http::Router& router, ServeContext& ctx) {
  console::AddConsoleRoutes(router);
  router.Add("GET", "/console/api/stats", http::SyncHandler([&ctx](const http::Request&) {
               const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count();
               http::Response r = http::Response::Json(200, ConsoleStatsJson(ctx.engine->stats(), ctx.model_id, now_ms));
               r.headers.Set("Cache-Control", "no-store");
               return r;
             }));
}

}  // namespace pagoda::server
