// POST /v1/embeddings as OpenAI defines it: one prefill-only engine request
// per input, pooled as the model says (docs/EMBEDDINGS.md), in float or
// base64, truncated to `dimensions` where asked.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "api/embedding_request.h"
#include "api/json_text.h"
#include "api/response_common.h"
#include "server/error_mapping.h"
#include "server/prefill_inputs.h"
#include "server/prefill_job.h"
#include "server/request_admission.h"
#include "server/request_prep.h"
#include "server/routes.h"

namespace pagoda::server {
namespace {

std::string RenderEmbeddings(const std::string& model, api::EncodingFormat format,
                             const std::vector<PrefillResults>& results, int64_t prompt_tokens) {
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    nlohmann::json item = {{"object", "embedding"}, {"index", i}};
    const std::vector<float>& v = results[i].front().embedding;
    if (format == api::EncodingFormat::kBase64) {
      item["embedding"] = api::Base64Floats(v);
    } else {
      item["embedding"] = v;
    }
    data.push_back(std::move(item));
  }
  nlohmann::json body = {{"object", "list"},
                         {"data", std::move(data)},
                         {"model", model},
                         {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  return api::DumpJson(body);
}

void HandleEmbeddings(ServeContext& ctx, const http::Request& request, std::shared_ptr<http::ResponseWriter> writer) {
  auto fail = [&](const api::ApiError& e) { writer->Respond(ErrorResponse(e)); };
  auto req = api::ParseEmbeddingRequest(request.body, ctx.limits);
  if (!req.ok()) return fail(req.error());
  if (auto e = CheckModel(ctx, req->model)) return fail(*e);
  const ModelAbilities& a = ctx.abilities;
  if (!a.embeds()) {
    return fail(api::InvalidValue("model", "The model '" + ctx.model_id +
                                               "' is a reranker (a cross-encoder): it serves /v1/rerank and "
                                               "/v1/score, not /v1/embeddings."));
  }
  if (req->dimensions && *req->dimensions > a.n_embd) {
    return fail(api::InvalidValue("dimensions", "Invalid 'dimensions': " + std::to_string(*req->dimensions) +
                                                    "; the model's embeddings have " + std::to_string(a.n_embd) +
                                                    " dimensions."));
  }
  if (auto e = CheckQueueFits(ctx, static_cast<int64_t>(req->inputs.size()), 1)) return fail(*e);
  const std::string id = api::NewResponseId("embd");
  std::vector<EngineRequest> requests;
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < req->inputs.size(); ++i) {
    const std::string param = req->inputs.size() > 1 ? "input[" + std::to_string(i) + "]" : "input";
    auto ids = InputTokens(ctx, req->inputs[i], req->truncate_prompt_tokens, param);
    if (!ids.ok()) return fail(ids.error());
    EngineRequest r;
    r.id = id + "-" + std::to_string(i);
    r.prompt = std::move(ids).value();
    r.max_tokens = 0;
    PrefillTask t;
    t.kind = PrefillTask::Kind::kEmbed;
    t.pooling = a.pooling;
    t.normalize = req->normalize;
    t.dimensions = static_cast<int32_t>(req->dimensions.value_or(0));
    r.prefill = std::move(t);
    prompt_tokens += static_cast<int64_t>(r.prompt.size());
    requests.push_back(std::move(r));
  }
  JobSpec spec;
  if (auto refused = AdmitGeneration(ctx, request, req->model, prompt_tokens, 0, std::nullopt, spec)) {
    writer->Respond(std::move(*refused));
    return;
  }
  PrefillRenderer render = [model = ctx.model_id, format = req->encoding_format](
                               const std::vector<PrefillResults>& results, int64_t tokens) {
    return RenderEmbeddings(model, format, results, tokens);
  };
  PrefillJob::Start(ctx, std::move(requests), std::move(spec), std::move(render), std::move(writer));
}

}  // namespace

void AddEmbeddingRoutes(http::Router& router, ServeContext& ctx) {
  router.Add("POST", "/v1/embeddings",
             http::Handler([&ctx](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
               HandleEmbeddings(ctx, r, std::move(w));
             }));
}

}  // namespace pagoda::server
