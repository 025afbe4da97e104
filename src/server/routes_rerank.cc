// POST /v1/rerank (Jina / Cohere shape) and POST /v1/score (vLLM's): query and
// document pairs scored by a cross-encoder's classifier head or a decoder
// reranker's yes/no answer (docs/EMBEDDINGS.md). The candidates of one query
// are one engine request: their shared prefix is computed once, and the
// ranking (and top_n) is made inside the engine.
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "api/json_text.h"
#include "api/rerank_request.h"
#include "api/response_common.h"
#include "server/error_mapping.h"
#include "server/prefill_inputs.h"
#include "server/prefill_job.h"
#include "server/request_admission.h"
#include "server/request_prep.h"
#include "server/routes.h"

namespace pagoda::server {
namespace {

std::optional<api::ApiError> CheckScores(const ServeContext& ctx) {
  if (ctx.abilities.scores()) return std::nullopt;
  return api::InvalidValue("model", "The model '" + ctx.model_id +
                                        "' cannot score pairs: it has no classifier head (a cross-encoder) and "
                                        "no single 'yes' and 'no' tokens to answer with (a decoder reranker).");
}

void HandleRerank(ServeContext& ctx, const http::Request& request, std::shared_ptr<http::ResponseWriter> writer) {
  auto fail = [&](const api::ApiError& e) { writer->Respond(ErrorResponse(e)); };
  auto req = api::ParseRerankRequest(request.body);
  if (!req.ok()) return fail(req.error());
  if (auto e = CheckModel(ctx, req->model)) return fail(*e);
  if (auto e = CheckScores(ctx)) return fail(*e);
  const int64_t n_docs = static_cast<int64_t>(req->documents.size());
  if (auto e = CheckQueueFits(ctx, 1, static_cast<int>(n_docs))) return fail(*e);
  const int32_t top_n = static_cast<int32_t>(std::min(req->top_n.value_or(n_docs), n_docs));
  const std::string id = api::NewResponseId("rerank");
  auto r = ScoreRequestFor(ctx, req->query, req->documents, req->truncate_prompt_tokens, top_n, "documents", id);
  if (!r.ok()) return fail(r.error());
  const int64_t tokens = PrefillPromptTokens(r.value());
  JobSpec spec;
  if (auto refused = AdmitGeneration(ctx, request, req->model, tokens, 0, std::nullopt, spec)) {
    writer->Respond(std::move(*refused));
    return;
  }
  std::vector<EngineRequest> requests;
  requests.push_back(std::move(r).value());
  PrefillRenderer render = [&ctx, id, top_n, documents = req->return_documents ? std::move(req->documents)
                                                                              : std::vector<std::string>{}](
                               const std::vector<PrefillResults>& results, int64_t prompt_tokens) {
    // The engine ranked them: rank 0 is the best.
    std::vector<const EngineEvent*> ranked(results.front().size());
    for (const EngineEvent& e : results.front()) ranked[static_cast<size_t>(e.rank)] = &e;
    nlohmann::json out = nlohmann::json::array();
    for (int32_t i = 0; i < top_n; ++i) {
      const EngineEvent& e = *ranked[static_cast<size_t>(i)];
      nlohmann::json item = {{"index", e.index}, {"relevance_score", RelevanceScore(ctx, e.score)}};
      if (!documents.empty()) item["document"] = {{"text", documents[static_cast<size_t>(e.index)]}};
      out.push_back(std::move(item));
    }
    nlohmann::json body = {{"id", id},
                           {"model", ctx.model_id},
                           {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}},
                           {"results", std::move(out)}};
    return api::DumpJson(body);
  };
  PrefillJob::Start(ctx, std::move(requests), std::move(spec), std::move(render), std::move(writer));
}

void HandleScore(ServeContext& ctx, const http::Request& request, std::shared_ptr<http::ResponseWriter> writer) {
  auto fail = [&](const api::ApiError& e) { writer->Respond(ErrorResponse(e)); };
  auto req = api::ParseScoreRequest(request.body);
  if (!req.ok()) return fail(req.error());
  if (auto e = CheckModel(ctx, req->model)) return fail(*e);
  if (auto e = CheckScores(ctx)) return fail(*e);
  // One engine request per distinct text_1, its pairs as candidates.
  std::map<std::string, std::vector<size_t>> by_query;
  for (size_t i = 0; i < req->text_1.size(); ++i) by_query[req->text_1[i]].push_back(i);
  if (auto e = CheckQueueFits(ctx, 1, static_cast<int>(req->text_2.size()))) return fail(*e);
  const std::string id = api::NewResponseId("score");
  std::vector<EngineRequest> requests;
  std::vector<std::vector<size_t>> pair_index;  // per engine request: its candidates' pair indices
  int64_t tokens = 0;
  for (const auto& [query, pairs] : by_query) {
    std::vector<std::string> docs;
    for (size_t i : pairs) docs.push_back(req->text_2[i]);
    auto r = ScoreRequestFor(ctx, query, docs, req->truncate_prompt_tokens, 0, "text_2",
                             id + "-" + std::to_string(requests.size()));
    if (!r.ok()) return fail(r.error());
    tokens += PrefillPromptTokens(r.value());
    requests.push_back(std::move(r).value());
    pair_index.push_back(pairs);
  }
  JobSpec spec;
  if (auto refused = AdmitGeneration(ctx, request, req->model, tokens, 0, std::nullopt, spec)) {
    writer->Respond(std::move(*refused));
    return;
  }
  const size_t n_pairs = req->text_2.size();
  PrefillRenderer render = [&ctx, id, n_pairs, pair_index = std::move(pair_index)](
                               const std::vector<PrefillResults>& results, int64_t prompt_tokens) {
    std::vector<double> scores(n_pairs);
    for (size_t q = 0; q < results.size(); ++q) {
      for (const EngineEvent& e : results[q]) scores[pair_index[q][static_cast<size_t>(e.index)]] = RelevanceScore(ctx, e.score);
    }
    nlohmann::json data = nlohmann::json::array();
    for (size_t i = 0; i < n_pairs; ++i) data.push_back({{"index", i}, {"object", "score"}, {"score", scores[i]}});
    nlohmann::json body = {{"id", id},
                           {"object", "list"},
                           {"created", api::UnixTimeNow()},
                           {"model", ctx.model_id},
                           {"data", std::move(data)},
                           {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
    return api::DumpJson(body);
  };
  PrefillJob::Start(ctx, std::move(requests), std::move(spec), std::move(render), std::move(writer));
}

}  // namespace

void AddRerankRoutes(http::Router& router, ServeContext& ctx) {
  for (const char* path : {"/v1/rerank", "/rerank", "/v2/rerank"}) {
    router.Add("POST", path, http::Handler([&ctx](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
                 HandleRerank(ctx, r, std::move(w));
               }));
  }
  for (const char* path : {"/v1/score", "/score"}) {
    router.Add("POST", path, http::Handler([&ctx](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
                 HandleScore(ctx, r, std::move(w));
               }));
  }
}

}  // namespace pagoda::server
