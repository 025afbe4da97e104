#include "api/completion_response.h"

#include <nlohmann/json.hpp>

#include "api/json_text.h"

namespace pagoda::api {

using nlohmann::json;

json CompletionLogprobs::ToJson() const {
  json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  int64_t offset = text_offset_start;
  for (const TokenLogprob& t : tokens) {
    toks.push_back(TokenDisplayText(t.bytes));
    if (t.logprob) {
      lps.push_back(WireLogprob(*t.logprob));
      json top = json::object();
      for (const TokenAlternative& alt : t.top) top[TokenDisplayText(alt.bytes)] = WireLogprob(alt.logprob);
      tops.push_back(std::move(top));
    } else {
      lps.push_back(nullptr);
      tops.push_back(nullptr);
    }
    offsets.push_back(offset);
    offset += static_cast<int64_t>(t.bytes.size());
  }
  return json{{"tokens", std::move(toks)},
              {"token_logprobs", std::move(lps)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

namespace {

json ChoicesJson(const std::vector<CompletionChoice>& choices) {
  json cs = json::array();
  for (const CompletionChoice& c : choices) {
    cs.push_back(json{{"index", c.index},
                      {"text", c.text},
                      {"logprobs", c.logprobs ? c.logprobs->ToJson() : json(nullptr)},
                      {"finish_reason", c.finish_reason ? json(FinishReasonName(*c.finish_reason)) : json(nullptr)}});
  }
  return cs;
}

}  // namespace

json Completion::ToJson() const {
  return json{{"id", id},
              {"object", "text_completion"},
              {"created", created},
              {"model", model},
              {"system_fingerprint", system_fingerprint},
              {"choices", ChoicesJson(choices)},
              {"usage", usage.ToJson()}};
}

json CompletionChunk::ToJson() const {
  json j{{"id", id},
         {"object", "text_completion"},
         {"created", created},
         {"model", model},
         {"system_fingerprint", system_fingerprint},
         {"choices", ChoicesJson(choices)}};
  if (usage_field) j["usage"] = usage ? usage->ToJson() : json(nullptr);
  return j;
}

CompletionStreamFormatter::CompletionStreamFormatter(std::string id, int64_t created, std::string model,
                                                     std::string system_fingerprint, bool include_usage)
    : id_(std::move(id)),
      created_(created),
      model_(std::move(model)),
      system_fingerprint_(std::move(system_fingerprint)),
      include_usage_(include_usage) {}

CompletionChunk CompletionStreamFormatter::Base() const {
  CompletionChunk c;
  c.id = id_;
  c.created = created_;
  c.model = model_;
  c.system_fingerprint = system_fingerprint_;
  c.usage_field = include_usage_;
  return c;
}

std::string CompletionStreamFormatter::TextChunk(int index, std::string_view text,
                                                 const CompletionLogprobs* logprobs) const {
  CompletionChunk c = Base();
  CompletionChoice choice;
  choice.index = index;
  choice.text = std::string(text);
  if (logprobs) choice.logprobs = *logprobs;
  c.choices.push_back(std::move(choice));
  return DumpJson(c.ToJson());
}

std::string CompletionStreamFormatter::FinishChunk(int index, FinishReason reason) const {
  CompletionChunk c = Base();
  CompletionChoice choice;
  choice.index = index;
  choice.finish_reason = reason;
  c.choices.push_back(std::move(choice));
  return DumpJson(c.ToJson());
}

std::string CompletionStreamFormatter::UsageChunk(const Usage& usage) const {
  CompletionChunk c = Base();
  c.usage_field = true;
  c.usage = usage;
  return DumpJson(c.ToJson());
}

}  // namespace pagoda::api
