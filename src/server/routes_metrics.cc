// GET /metrics: the engine's stats, the HTTP server's, the control plane's
// and the batch service's, as Prometheus text.
#include "server/metrics_text.h"
#include "server/routes.h"

namespace pagoda::server {

void AddMetricsRoutes(http::Router& router, ServeContext& ctx) {
  router.Add("GET", "/metrics", http::SyncHandler([&ctx](const http::Request&) {
               const kvtransfer::InboxStats kv_received =
                   ctx.kv_inbox != nullptr ? ctx.kv_inbox->stats() : kvtransfer::InboxStats{};
               http::Response r = http::Response::Text(
                   200, RenderPrometheus(ctx.engine->stats(), ctx.model_id) +
                            (ctx.http != nullptr ? RenderPrometheus(ctx.http->stats(), ctx.model_id) : std::string()) +
                            (ctx.control != nullptr ? ctx.control->RenderMetrics() : std::string()) +
                            (ctx.batch != nullptr ? ctx.batch->RenderMetrics() : std::string()) +
                            RenderKvTransferMetrics(ctx.model_id, ServeRoleName(ctx.role), ctx.kv_transfer_sent,
                                                    ctx.kv_inbox != nullptr ? &kv_received : nullptr));
               r.content_type = "text/plain; version=0.0.4; charset=utf-8";
               return r;
             }));
}

}  // namespace pagoda::server
