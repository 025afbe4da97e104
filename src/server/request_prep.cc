#include "server/request_prep.h"

#include <random>

#include <nlohmann/json.hpp>


namespace pagoda::server {

std::optional<api::ApiError> CheckModel(const ServeContext& ctx, const std::string& model) {
  if (model.empty() || model == ctx.model_id) return std::nullopt;
  return api::ModelNotFound(model);
}

std::optional<api::ApiError> CheckGenerates(const ServeContext& ctx) {
  if (ctx.abilities.generates) return std::nullopt;
  return api::InvalidValue("model", "The model '" + ctx.model_id +
                                        "' is an embedding model: it serves /v1/embeddings, /v1/rerank and "
                                        "/v1/score, not text generation.");
}

std::optional<api::ApiError> CheckQueueFits(const ServeContext& ctx, int64_t n_prompts, int n) {
  const int64_t n_sequences = n_prompts * n;
  if (n_sequences <= ctx.max_waiting) return std::nullopt;
  std::string what = n_prompts > 1 ? std::to_string(n_prompts) + " prompts x n=" + std::to_string(n) + " need "
                                   : "n=" + std::to_string(n) + " needs ";
  return api::InvalidValue("n", what + std::to_string(n_sequences) + " sequences, more than the server queues (" +
                                    std::to_string(ctx.max_waiting) + ").");
}

api::ApiResult<std::optional<GrammarConstraint>> BuildGrammarConstraint(const ServeContext& ctx,
                                                                       const chat::ConstraintRequest& request) {
  auto bad = [&](const std::string& message) {
    const std::string param = chat::ConstraintParam(request);
    return api::InvalidValue(param, "Invalid '" + param + "': " + message);
  };
  auto spec = chat::BuildConstraint(request);
  if (!spec.ok()) return bad(spec.status().message());
  if (!spec->has_value()) return std::optional<GrammarConstraint>();
  const chat::ConstraintSpec& s = **spec;
  auto g = ctx.grammar_cache ? ctx.grammar_cache->GetOrCompile(s.gbnf, s.root) : grammar::CompileGbnf(s.gbnf, s.root);
  if (!g.ok()) {
    // A schema or regex that converts but cannot compile (a size limit, an
    // empty language) is the request's, as is a malformed grammar.
    return bad(g.status().message());
  }
  GrammarConstraint c;
  c.grammar = std::move(g).value();
  c.delay_until = s.delay_until;
  return std::optional<GrammarConstraint>(std::move(c));
}

EngineRequest MakeEngineRequest(const api::GenerationOptions& o, std::vector<TokenId> prompt, int64_t max_tokens,
                                int top_logprobs, bool logprobs, const std::string& id) {
  EngineRequest r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_tokens = static_cast<int32_t>(std::min<int64_t>(max_tokens, INT32_MAX));
  r.n = o.n;
  r.ignore_eog = o.ignore_eos;
  r.logprobs = logprobs;
  r.top_logprobs = logprobs ? top_logprobs : 0;
  SamplingParams& s = r.sampling;
  s.temperature = static_cast<float>(o.temperature.value_or(1.0));
  s.top_p = static_cast<float>(o.top_p.value_or(1.0));
  s.top_k = std::max<int32_t>(0, o.top_k.value_or(0));
  s.min_p = static_cast<float>(o.min_p.value_or(0.0));
  s.presence_penalty = static_cast<float>(o.presence_penalty.value_or(0.0));
  s.frequency_penalty = static_cast<float>(o.frequency_penalty.value_or(0.0));
  s.repetition_penalty = static_cast<float>(o.repetition_penalty.value_or(1.0));
  for (const auto& [tok, bias] : o.logit_bias) s.logit_bias[tok] = bias;
  if (o.seed) {
    s.seed = static_cast<uint64_t>(*o.seed);
  } else {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    s.seed = rng();
  }
  return r;
}

}  // namespace pagoda::server
