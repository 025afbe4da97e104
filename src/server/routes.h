// Route registration: each routes_*.cc adds one concept's endpoints to the
// router. Handlers borrow `ctx`, which must outlive the HTTP server.
#pragma once

#include "http/router.h"
#include "server/serve_context.h"

namespace pagoda::server {

void AddChatRoutes(http::Router& router, ServeContext& ctx);        // POST /v1/chat/completions
void AddCompletionRoutes(http::Router& router, ServeContext& ctx);  // POST /v1/completions
void AddModelRoutes(http::Router& router, ServeContext& ctx);       // GET /v1/models, GET /health
void AddMetricsRoutes(http::Router& router, ServeContext& ctx);     // GET /metrics
void AddTokenizeRoutes(http::Router& router, ServeContext& ctx);    // POST /tokenize, /detokenize
void AddEmbeddingRoutes(http::Router& router, ServeContext& ctx);   // POST /v1/embeddings
void AddRerankRoutes(http::Router& router, ServeContext& ctx);      // POST /v1/rerank, /v1/score
void AddConsoleRoutes(http::Router& router, ServeContext& ctx);     // GET / (web console), /console/api/stats

}  // namespace pagoda::server
