// POST /tokenize and POST /detokenize (vLLM's extension endpoints).
#include "api/json_text.h"
#include "api/token_budget.h"
#include "api/tokenize.h"
#include "chat/prompt_encoding.h"
#include "server/error_mapping.h"
#include "server/request_prep.h"
#include "server/routes.h"

namespace pagoda::server {
namespace {

http::Response Tokenize(ServeContext& ctx, const http::Request& request) {
  auto req = api::ParseTokenizeRequest(request.body, ctx.limits);
  if (!req.ok()) return ErrorResponse(req.error());
  if (auto e = CheckModel(ctx, req->model)) return ErrorResponse(*e);
  std::vector<TokenId> ids;
  if (req->messages) {
    auto enc = chat::EncodeChatPrompt(ctx.prompt, *req->messages, req->add_generation_prompt, req->tools);
    if (!enc.ok()) return ErrorResponse(enc.error());
    ids = std::move(enc).value();
  } else {
    ids = ctx.tokenizer->Encode(req->text.value_or(""), req->add_special, /*parse_special=*/true);
  }
  return http::Response::Json(200, api::DumpJson(api::TokenizeResponseJson(ids, ctx.n_ctx)));
}

http::Response Detokenize(ServeContext& ctx, const http::Request& request) {
  auto req = api::ParseDetokenizeRequest(request.body, ctx.limits);
  if (!req.ok()) return ErrorResponse(req.error());
  if (auto e = CheckModel(ctx, req->model)) return ErrorResponse(*e);
  if (auto e = api::CheckTokenIds(req->tokens, ctx.tokenizer->vocab_size(), "tokens")) return ErrorResponse(*e);
  return http::Response::Json(200, api::DumpJson(api::DetokenizeResponseJson(ctx.tokenizer->Decode(req->tokens))));
}

}  // namespace

void AddTokenizeRoutes(http::Router& router, ServeContext& ctx) {
  router.Add("POST", "/tokenize",
             http::SyncHandler([&ctx](const http::Request& r) { return Tokenize(ctx, r); }));
  router.Add("POST", "/detokenize",
             http::SyncHandler([&ctx](const http::Request& r) { return Detokenize(ctx, r); }));
}

}  // namespace pagoda::server
