#include "api/chat_response.h"

#include <nlohmann/json.hpp>

#include "api/json_text.h"

namespace pagoda::api {

using nlohmann::json;

namespace {

json BytesArray(std::string_view bytes) {
  json a = json::array();
  for (unsigned char c : bytes) a.push_back(static_cast<int>(c));
  return a;
}

json FinishJson(const std::optional<FinishReason>& r) {
  return r ? json(FinishReasonName(*r)) : json(nullptr);
}

}  // namespace

json ChatLogprobsToJson(const std::vector<TokenLogprob>& tokens) {
  json content = json::array();
  for (const TokenLogprob& t : tokens) {
    json top = json::array();
    for (const TokenAlternative& alt : t.top) {
      top.push_back(json{{"token", TokenDisplayText(alt.bytes)},
                         {"logprob", WireLogprob(alt.logprob)},
                         {"bytes", BytesArray(alt.bytes)}});
    }
    content.push_back(json{{"token", TokenDisplayText(t.bytes)},
                           {"logprob", WireLogprob(t.logprob.value_or(0.0))},
                           {"bytes", BytesArray(t.bytes)},
                           {"top_logprobs", std::move(top)}});
  }
  return json{{"content", std::move(content)}, {"refusal", nullptr}};
}

json ChatCompletion::ToJson() const {
  json cs = json::array();
  for (const ChatChoice& c : choices) {
    json message{{"role", "assistant"},
                 {"content", c.content.empty() && !c.tool_calls.empty() ? json(nullptr) : json(c.content)},
                 {"refusal", nullptr}};
    if (c.reasoning_content) message["reasoning_content"] = *c.reasoning_content;
    if (!c.tool_calls.empty()) {
      json calls = json::array();
      for (const ToolCall& t : c.tool_calls) calls.push_back(ToolCallToJson(t));
      message["tool_calls"] = std::move(calls);
    }
    cs.push_back(json{{"index", c.index},
                      {"message", std::move(message)},
                      {"logprobs", c.logprobs ? ChatLogprobsToJson(*c.logprobs) : json(nullptr)},
                      {"finish_reason", FinishReasonName(c.finish_reason)}});
  }
  return json{{"id", id},
              {"object", "chat.completion"},
              {"created", created},
              {"model", model},
              {"system_fingerprint", system_fingerprint},
              {"choices", std::move(cs)},
              {"usage", usage.ToJson()}};
}

json ChatCompletionChunk::ToJson() const {
  json cs = json::array();
  for (const ChatChunkChoice& c : choices) {
    json delta = json::object();
    if (c.role) delta["role"] = *c.role;
    if (c.content) delta["content"] = *c.content;
    if (c.reasoning_content) delta["reasoning_content"] = *c.reasoning_content;
    if (!c.tool_calls.empty()) {
      json calls = json::array();
      for (const ToolCallDelta& t : c.tool_calls) calls.push_back(ToolCallDeltaToJson(t));
      delta["tool_calls"] = std::move(calls);
    }
    cs.push_back(json{{"index", c.index},
                      {"delta", std::move(delta)},
                      {"logprobs", c.logprobs ? ChatLogprobsToJson(*c.logprobs) : json(nullptr)},
                      {"finish_reason", FinishJson(c.finish_reason)}});
  }
  json j{{"id", id},
         {"object", "chat.completion.chunk"},
         {"created", created},
         {"model", model},
         {"system_fingerprint", system_fingerprint},
         {"choices", std::move(cs)}};
  if (usage_field) j["usage"] = usage ? usage->ToJson() : json(nullptr);
  return j;
}

ChatStreamFormatter::ChatStreamFormatter(std::string id, int64_t created, std::string model,
                                         std::string system_fingerprint, bool include_usage)
    : id_(std::move(id)),
      created_(created),
      model_(std::move(model)),
      system_fingerprint_(std::move(system_fingerprint)),
      include_usage_(include_usage) {}

ChatCompletionChunk ChatStreamFormatter::Base() const {
  ChatCompletionChunk c;
  c.id = id_;
  c.created = created_;
  c.model = model_;
  c.system_fingerprint = system_fingerprint_;
  c.usage_field = include_usage_;
  return c;
}

std::string ChatStreamFormatter::RoleChunk(int index) const {
  ChatCompletionChunk c = Base();
  ChatChunkChoice choice;
  choice.index = index;
  choice.role = "assistant";
  choice.content = "";
  c.choices.push_back(std::move(choice));
  return DumpJson(c.ToJson());
}

std::string ChatStreamFormatter::ContentChunk(int index, std::string_view text,
                                              const std::vector<TokenLogprob>* logprobs) const {
  ChatCompletionChunk c = Base();
  ChatChunkChoice choice;
  choice.index = index;
  choice.content = std::string(text);
  if (logprobs) choice.logprobs = *logprobs;
  c.choices.push_back(std::move(choice));
  return DumpJson(c.ToJson());
}

std::string ChatStreamFormatter::DeltaChunk(int index, const ChatDelta& delta,
                                            const std::vector<TokenLogprob>* logprobs) const {
  ChatCompletionChunk c = Base();
  ChatChunkChoice choice;
  choice.index = index;
  if (!delta.content.empty()) choice.content = delta.content;
  if (!delta.reasoning.empty()) choice.reasoning_content = delta.reasoning;
  choice.tool_calls = delta.tool_calls;
  if (logprobs) choice.logprobs = *logprobs;
  c.choices.push_back(std::move(choice));
  return DumpJson(c.ToJson());
}

std::string ChatStreamFormatter::FinishChunk(int index, FinishReason reason) const {
  ChatCompletionChunk c = Base();
  ChatChunkChoice choice;
  choice.index = index;
  choice.finish_reason = reason;
  c.choices.push_back(std::move(choice));
  return DumpJson(c.ToJson());
}

std::string ChatStreamFormatter::UsageChunk(const Usage& usage) const {
  ChatCompletionChunk c = Base();
  c.usage_field = true;
  c.usage = usage;
  return DumpJson(c.ToJson());
}

}  // namespace pagoda::api
