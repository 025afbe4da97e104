// POST /v1/chat/completions: messages -> chat template -> tokens -> engine,
// answered as one chat.completion or as a stream of chunks.
#include <memory>
#include <string>

#include "api/chat_request.h"
#include "api/chat_response.h"
#include "api/json_text.h"
#include "api/token_budget.h"
#include "server/error_mapping.h"
#include "server/generation_job.h"
#include "server/request_prep.h"
#include "server/routes.h"

namespace pagoda::server {
namespace {

class ChatFormat final : public ResponseFormat {
 public:
  ChatFormat(std::string id, int64_t created, std::string model, bool include_usage)
      : id_(id), created_(created), model_(model), stream_(id, created, model, kSystemFingerprint, include_usage) {}

  std::string StreamBegin(int index) const override { return stream_.RoleChunk(index); }
  std::string StreamDelta(int index, std::string_view text, const std::vector<api::TokenLogprob>* logprobs,
                          int64_t) const override {
    return stream_.ContentChunk(index, text, logprobs);
  }
  std::string StreamFinish(int index, api::FinishReason reason) const override {
    return stream_.FinishChunk(index, reason);
  }
  std::string StreamUsage(const api::Usage& usage) const override { return stream_.UsageChunk(usage); }
  bool include_usage() const override { return stream_.include_usage(); }

  std::string Body(const std::vector<ChoiceOutput>& choices, const api::Usage& usage) const override {
    api::ChatCompletion c;
    c.id = id_;
    c.created = created_;
    c.model = model_;
    c.system_fingerprint = kSystemFingerprint;
    for (const auto& o : choices) {
      api::ChatChoice ch;
      ch.index = o.index;
      ch.content = o.text;
      ch.finish_reason = o.finish;
      ch.logprobs = o.logprobs;
      c.choices.push_back(std::move(ch));
    }
    c.usage = usage;
    return api::DumpJson(c.ToJson());
  }

 private:
  std::string id_;
  int64_t created_;
  std::string model_;
  api::ChatStreamFormatter stream_;
};

void HandleChat(ServeContext& ctx, const http::Request& request, std::shared_ptr<http::ResponseWriter> writer) {
  auto fail = [&](const api::ApiError& e) { writer->Respond(ErrorResponse(e)); };
  auto req = api::ParseChatCompletionRequest(request.body, ctx.limits);
  if (!req.ok()) return fail(req.error());
  const api::GenerationOptions& o = req->options;
  if (auto e = CheckModel(ctx, o.model)) return fail(*e);
  if (auto e = CheckQueueFits(ctx, 1, o.n)) return fail(*e);
  if (auto e = api::CheckLogitBias(o, ctx.tokenizer->vocab_size())) return fail(*e);
  auto prompt = EncodeChat(ctx, req->messages);
  if (!prompt.ok()) return fail(prompt.error());
  auto max_tokens = api::ResolveMaxTokens(static_cast<int64_t>(prompt->size()), o, ctx.n_ctx, std::nullopt, "messages");
  if (!max_tokens.ok()) return fail(max_tokens.error());

  const std::string id = api::NewResponseId("chatcmpl");
  std::vector<EngineRequest> requests;
  requests.push_back(MakeEngineRequest(o, std::move(prompt).value(), max_tokens.value(), req->top_logprobs,
                                       req->logprobs, id));
  JobSpec spec;
  spec.stream = o.stream;
  spec.logprobs = req->logprobs;
  spec.stop = o.stop;
  spec.n = o.n;
  spec.prefixes = {""};
  spec.text_offset_starts = {0};
  auto format = std::make_unique<ChatFormat>(id, api::UnixTimeNow(), ctx.model_id, o.include_usage);
  if (auto e = GenerationJob::Start(ctx, std::move(requests), std::move(spec), std::move(format), writer)) fail(*e);
}

}  // namespace

void AddChatRoutes(http::Router& router, ServeContext& ctx) {
  router.Add("POST", "/v1/chat/completions",
             http::Handler([&ctx](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
               HandleChat(ctx, r, std::move(w));
             }));
}

}  // namespace pagoda::server
