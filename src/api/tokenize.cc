#include "api/tokenize.h"

#include <nlohmann/json.hpp>

#include "api/completion_request.h"
#include "api/json_fields.h"
#include "api/json_text.h"

namespace pagoda::api {

using nlohmann::json;

ApiResult<TokenizeRequest> ParseTokenizeRequest(std::string_view body, const RequestLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  TokenizeRequest req;
  int inputs = 0;
  for (const auto& [key, value] : parsed.value().items()) {
    if (value.is_null()) continue;
    if (key == "model") {
      if (auto e = internal::ReadString(value, key, &req.model)) return *e;
    } else if (key == "prompt" || key == "content") {
      std::string text;
      if (auto e = internal::ReadString(value, key, &text)) return *e;
      req.text = std::move(text);
      ++inputs;
    } else if (key == "messages") {
      std::vector<ChatMessage> messages;
      if (auto e = internal::ReadMessages(value, &messages)) return *e;
      req.messages = std::move(messages);
      ++inputs;
    } else if (key == "add_special_tokens" || key == "add_special") {
      if (auto e = internal::ReadBool(value, key, &req.add_special)) return *e;
    } else if (key == "add_generation_prompt") {
      if (auto e = internal::ReadBool(value, key, &req.add_generation_prompt)) return *e;
    } else if (key == "tools") {
      if (auto e = internal::ReadTools(value, &req.tools)) return *e;
    } else if (limits.reject_unknown_fields) {
      return UnknownParameter(key);
    }
  }
  if (inputs == 0) return MissingParameter("prompt");
  if (inputs > 1) return InvalidValue("prompt", "Give exactly one of 'prompt', 'content' and 'messages'.");
  return req;
}

ApiResult<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body, const RequestLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  DetokenizeRequest req;
  bool have_tokens = false;
  for (const auto& [key, value] : parsed.value().items()) {
    if (value.is_null()) continue;
    if (key == "model") {
      if (auto e = internal::ReadString(value, key, &req.model)) return *e;
    } else if (key == "tokens") {
      // An empty list detokenizes to "".
      if (value.is_array() && value.empty()) {
        have_tokens = true;
        continue;
      }
      if (auto e = internal::ReadTokenIds(value, "tokens", &req.tokens)) return *e;
      have_tokens = true;
    } else if (limits.reject_unknown_fields) {
      return UnknownParameter(key);
    }
  }
  if (!have_tokens) return MissingParameter("tokens");
  return req;
}

json TokenizeResponseJson(const std::vector<int32_t>& tokens, int64_t max_model_len) {
  return json{{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", max_model_len}};
}

json DetokenizeResponseJson(std::string_view text) {
  return json{{"prompt", std::string(text)}, {"content", std::string(text)}};
}

}  // namespace pagoda::api
