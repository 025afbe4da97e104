// POST /v1/chat/completions: messages -> chat template -> tokens -> engine,
// answered as one chat.completion or as a stream of chunks.
#include <memory>
#include <string>

#include "api/chat_request.h"
#include "api/chat_response.h"
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

class ChatFormat final : public ResponseFormat {
 public:
  ChatFormat(std::string id, int64_t created, std::string model, bool include_usage)
      : id_(id), created_(created), model_(model), stream_(id, created, model, kSystemFingerprint, include_usage) {}

  std::string StreamBegin(int index) const override { return stream_.RoleChunk(index); }
  std::string StreamDelta(int index, std::string_view text, const std::vector<api::TokenLogprob>* logprobs,
                          int64_t) const override {
    return stream_.ContentChunk(index, text, logprobs);
  }
  std::string StreamChatDelta(int index, const api::ChatDelta& delta,
                              const std::vector<api::TokenLogprob>* logprobs) const override {
    return stream_.DeltaChunk(index, delta, logprobs);
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
      if (o.message) {
        ch.content = o.message->content;
        if (o.message->has_reasoning) ch.reasoning_content = o.message->reasoning;
        ch.tool_calls = o.message->tool_calls;
      } else {
        ch.content = o.text;
      }
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
  if (auto e = CheckGenerates(ctx)) return fail(*e);
  if (auto e = CheckQueueFits(ctx, 1, o.n)) return fail(*e);
  if (auto e = api::CheckLogitBias(o, ctx.tokenizer->vocab_size())) return fail(*e);
  // tool_choice "none" keeps the tools out of the prompt altogether.
  const std::vector<api::ToolFunction>& tools = chat::PromptTools(req.value());
  std::string prompt_text;
  auto prompt = chat::EncodeChatPrompt(ctx.prompt, req->messages, true, tools, &prompt_text);
  if (!prompt.ok()) return fail(prompt.error());
  const chat::ChatFormat& chat_format = ctx.prompt.format;
  chat::ConstraintRequest cr;
  cr.structured = o.structured;
  cr.tools = tools;
  cr.tool_choice = req->tool_choice;
  cr.parallel_tool_calls = req->parallel_tool_calls;
  cr.format = chat_format;
  cr.reasoning_open = chat::PromptOpensReasoning(chat_format, prompt_text);
  auto constraint = BuildGrammarConstraint(ctx, cr);
  if (!constraint.ok()) return fail(constraint.error());
  auto max_tokens = api::ResolveMaxTokens(static_cast<int64_t>(prompt->size()), o, ctx.n_ctx, std::nullopt, "messages");
  if (!max_tokens.ok()) return fail(max_tokens.error());

  const std::string id = api::NewResponseId("chatcmpl");
  std::vector<EngineRequest> requests;
  requests.push_back(MakeEngineRequest(o, std::move(prompt).value(), max_tokens.value(), req->top_logprobs,
                                       req->logprobs, id));
  requests.back().constraint = std::move(constraint).value();
  JobSpec spec;
  spec.stream = o.stream;
  spec.kv_transfer = o.kv_transfer;
  spec.logprobs = req->logprobs;
  spec.stop = o.stop;
  spec.n = o.n;
  spec.prefixes = {""};
  spec.text_offset_starts = {0};
  spec.constraint_param = chat::ConstraintParam(cr);
  if (auto refused = AdmitGeneration(ctx, request, o.model, static_cast<int64_t>(requests.back().prompt.size()),
                                     static_cast<int64_t>(max_tokens.value()) * o.n, o.service_tier, spec)) {
    writer->Respond(std::move(*refused));
    return;
  }
  if (!tools.empty() || chat_format.has_reasoning()) {
    chat::ParserOptions po;
    po.format = chat_format;
    po.tools = !tools.empty();
    po.reasoning_open = cr.reasoning_open;
    po.functions = tools;  // GLM-4.5 reads each argument back by its schema
    po.make_id = [mistral = chat_format.dialect == chat::ToolDialect::kMistral](int) {
      // "call_<24 hex>"; Mistral templates insist on 9 alphanumerics.
      const std::string hex = api::NewResponseId("x").substr(2);
      return mistral ? hex.substr(0, 9) : "call_" + hex;
    };
    spec.parser = std::move(po);
    spec.marker_tokens = ctx.marker_tokens;
  }
  auto format = std::make_unique<ChatFormat>(id, api::UnixTimeNow(), ctx.model_id, o.include_usage);
  GenerationJob::Start(ctx, std::move(requests), std::move(spec), std::move(format), std::move(writer));
}

}  // namespace

void AddChatRoutes(http::Router& router, ServeContext& ctx) {
  router.Add("POST", "/v1/chat/completions",
             http::Handler([&ctx](const http::Request& r, std::shared_ptr<http::ResponseWriter> w) {
               HandleChat(ctx, r, std::move(w));
             }));
}

}  // namespace pagoda::server
