// GET /v1/models (the one served model) and GET /health (200 once the engine
// loop runs, 503 before and while shutting down).
#include "api/json_text.h"
#include "api/model_list.h"
#include "server/routes.h"

namespace pagoda::server {

void AddModelRoutes(http::Router& router, ServeContext& ctx) {
  router.Add("GET", "/v1/models", http::SyncHandler([&ctx](const http::Request&) {
               api::ModelList list;
               api::ModelCard card;
               card.id = ctx.model_id;
               card.created = ctx.created;
               card.max_model_len = ctx.n_ctx;
               list.data.push_back(card);
               return http::Response::Json(200, api::DumpJson(list.ToJson()));
             }));
  router.Add("GET", "/health", http::SyncHandler([&ctx](const http::Request&) {
               if (!ctx.ready.load()) {
                 return http::ErrorResponse(503, "The engine is not running.", "not_ready");
               }
               return http::Response::Json(200, R"({"status":"ok"})");
             }));
}

}  // namespace pagoda::server
