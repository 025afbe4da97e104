// POST /v1/completions: one engine request per prompt (text or token ids),
// each with n choices; echo and logprobs as the legacy API defines them.
#include <memory>
#include <string>

#include "api/completion_request.h"
#include "api/completion_response.h"
#include "api/json_text.h"
#include "api/token_budget.h"
#include "chat/prompt_encoding.h"
#include "server/error_mapping.h"
#include "server/generation_job.h"
#include "server/request_prep.h"
#include "server/routes.h"
#include "server/request_admission.h"

namespace pagoda::server {
namespace {

class CompletionFormat final : public ResponseFormat {
 public:
  CompletionFormat(std::string id, int64_t created, std::string model, bool include_usage)
      : id_(id), created_(created), model_(model), stream_(id, created, model, kSystemFingerprint, include_usage) {}

  std::string StreamBegin(int) const override { return {}; }
  std::string StreamDelta(int index, std::string_view text, const std::vector<api::TokenLogprob>* logprobs,
                          int64_t text_offset) const override {
    if (logprobs == nullptr) return stream_.TextChunk(index, text);
    api::CompletionLogprobs lp{*logprobs, text_offset};
    return stream_.TextChunk(index, text, &lp);
  }
  std::string StreamFinish(int index, api::FinishReason reason) const override {
    return stream_.FinishChunk(index, reason);
  }
  std::string StreamUsage(const api::Usage& usage) const override { return stream_.UsageChunk(usage); }
  bool include_usage() const override { return stream_.include_usage(); }

  std::string Body(const std::vector<ChoiceOutput>& choices, const api::Usage& usage) const override {
    api::Completion c;
    c.id = id_;
    c.created = created_;
    c.model = model_;
    c.system_fingerprint = kSystemFingerprint;
    for (const auto& o : choices) {
      api::CompletionChoice ch;
      ch.index = o.index;
      ch.text = o.text;
      ch.finish_reason = o.finish;
      if (o.logprobs) ch.logprobs = api::CompletionLogprobs{*o.logprobs, o.text_offset_start};
      c.choices.push_back(std::move(ch));
    }
    c.usage = usage;
    return api::DumpJson(c.ToJson());
  }

 private:
  std::string id_;
  int64_t created_;
  std::string model_;
  api::CompletionStreamFormatter stream_;
};

void HandleCompletion(ServeContext& ctx, const http::Request& request, std::shared_ptr<http::ResponseWriter> writer) {
  auto fail = [&](const api::ApiError& e) { writer->Respond(ErrorResponse(e)); };
  auto req = api::ParseCompletionRequest(request.body, ctx.limits);
  if (!req.ok()) return fail(req.error());
  const api::GenerationOptions& o = req->options;
  if (auto e = CheckModel(ctx, o.model)) return fail(*e);
  if (auto e = CheckGenerates(ctx)) return fail(*e);
  if (auto e = api::CheckLogitBias(o, ctx.tokenizer->vocab_size())) return fail(*e);
  if (auto e = CheckQueueFits(ctx, static_cast<int64_t>(req->prompts.size()), o.n)) return fail(*e);
  chat::ConstraintRequest cr;
  cr.structured = o.structured;
  auto constraint = BuildGrammarConstraint(ctx, cr);
  if (!constraint.ok()) return fail(constraint.error());
  const std::string id = api::NewResponseId("cmpl");
  const bool logprobs = req->logprobs.has_value();
  std::vector<EngineRequest> requests;
  JobSpec spec;
  spec.stream = o.stream;
  spec.kv_transfer = o.kv_transfer;
  spec.logprobs = logprobs;
  spec.stop = o.stop;
  spec.n = o.n;
  spec.constraint_param = chat::ConstraintParam(cr);
  for (size_t i = 0; i < req->prompts.size(); ++i) {
    const api::CompletionPrompt& p = req->prompts[i];
    std::vector<TokenId> ids;
    std::string text;
    if (p.is_tokens) {
      const std::string param = req->prompts.size() > 1 ? "prompt[" + std::to_string(i) + "]" : "prompt";
      if (auto e = api::CheckTokenIds(p.tokens, ctx.tokenizer->vocab_size(), param)) return fail(*e);
      ids = p.tokens;
      text = ctx.tokenizer->Decode(ids);
    } else {
      auto enc = chat::EncodeTextPrompt(ctx.prompt, p.text);
      if (!enc.ok()) return fail(enc.error());
      ids = std::move(enc).value();
      text = p.text;
    }
    auto max_tokens = api::ResolveMaxTokens(static_cast<int64_t>(ids.size()), o, ctx.n_ctx,
                                            api::kCompletionDefaultMaxTokens, "prompt");
    if (!max_tokens.ok()) return fail(max_tokens.error());
    requests.push_back(MakeEngineRequest(o, std::move(ids), max_tokens.value(), req->logprobs.value_or(0), logprobs,
                                         id + "-" + std::to_string(i)));
    requests.back().constraint = constraint.value();
    if (req->echo && logprobs) {
      // The prompt's own token logprobs lead each choice's (vLLM's prompt_logprobs).
      requests.back().prompt_logprobs = true;
      spec.echo_first_tokens.push_back(requests.back().prompt.front());
    }
    spec.prefixes.push_back(req->echo ? text : std::string());
    spec.text_offset_starts.push_back(req->echo ? 0 : static_cast<int64_t>(text.size()));
  }
  auto format = std::make_unique<CompletionFormat>(id, api::UnixTimeNow(), ctx.model_id, o.include_usage);
  int64_t prompt_tokens = 0, completion_budget = 0;
  for (const EngineRequest& r : requests) {
    prompt_tokens += static_cast<int64_t>(r.prompt.size());
    completion_budget += static_cast<int64_t>(r.max_tokens) * o.n;
  }
  if (auto refused = AdmitGeneration(ctx, request, o.model, prompt_tokens, completion_budget, o.service_tier, spec)) {
    writer->Respond(std::move(*refused));
    return;
  }
  GenerationJob::Start(ctx, std::move(requests), std::move(spec), std::move(format), std::move(writer));
}

}  // namespace

void AddCompletionRoutes(http::Router& router, ServeContext& ctx) {
  router.Add("POST", "/v1/completions",
             http::Handler([&ctx](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
               HandleCompletion(ctx, r, std::move(w));
             }));
}

}  // namespace pagoda::server
