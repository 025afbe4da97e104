#include "api/chat_request.h"

#include <nlohmann/json.hpp>

#include "api/json_fields.h"
#include "api/json_text.h"

namespace pagoda::api {

using nlohmann::json;
using internal::MaybeError;
using internal::Path;

const char* ChatRoleName(ChatRole role) {
  switch (role) {
    case ChatRole::kSystem: return "system";
    case ChatRole::kDeveloper: return "developer";
    case ChatRole::kUser: return "user";
    case ChatRole::kAssistant: return "assistant";
    case ChatRole::kTool: return "tool";
  }
  return "user";
}

namespace internal {

namespace {

MaybeError ReadRole(const json& v, const std::string& param, ChatRole* out) {
  std::string role;
  if (auto e = ReadString(v, param, &role)) return e;
  static constexpr ChatRole kRoles[] = {ChatRole::kSystem, ChatRole::kDeveloper, ChatRole::kUser,
                                        ChatRole::kAssistant, ChatRole::kTool};
  for (ChatRole r : kRoles) {
    if (role == ChatRoleName(r)) {
      *out = r;
      return std::nullopt;
    }
  }
  if (role == "function") return UnsupportedValue(param, "the deprecated 'function' role is not supported.");
  return InvalidValue(param, "Invalid '" + param + "': '" + role +
                                 "' is not one of 'system', 'developer', 'user', 'assistant', 'tool'.");
}

MaybeError ReadContentParts(const json& v, const std::string& param, std::string* out) {
  bool first = true;
  for (size_t j = 0; j < v.size(); ++j) {
    const std::string part_param = Path(param, j);
    const json& part = v[j];
    if (!part.is_object()) return InvalidType(part_param, "an object");
    const auto type_it = part.find("type");
    if (type_it == part.end()) return MissingParameter(Path(part_param, "type"));
    std::string type;
    if (auto e = ReadString(*type_it, Path(part_param, "type"), &type)) return e;
    if (type != "text") {
      return UnsupportedValue(Path(part_param, "type"),
                              "content parts of type '" + type + "' are not supported; only 'text' is.");
    }
    const auto text_it = part.find("text");
    if (text_it == part.end()) return MissingParameter(Path(part_param, "text"));
    std::string text;
    if (auto e = ReadString(*text_it, Path(part_param, "text"), &text)) return e;
    if (!first) out->push_back('\n');
    out->append(text);
    first = false;
  }
  return std::nullopt;
}

MaybeError ReadMessage(const json& m, const std::string& param, ChatMessage* out) {
  if (!m.is_object()) return InvalidType(param, "an object");
  const auto role_it = m.find("role");
  if (role_it == m.end()) return MissingParameter(Path(param, "role"));
  if (auto e = ReadRole(*role_it, Path(param, "role"), &out->role)) return e;

  const std::string content_param = Path(param, "content");
  const auto content_it = m.find("content");
  if (content_it == m.end() || content_it->is_null()) {
    if (out->role != ChatRole::kAssistant) return MissingParameter(content_param);
    out->content_null = true;
  } else if (content_it->is_string()) {
    if (auto e = ReadString(*content_it, content_param, &out->content)) return e;
  } else if (content_it->is_array()) {
    if (auto e = ReadContentParts(*content_it, content_param, &out->content)) return e;
  } else {
    return InvalidType(content_param, "a string or an array of content parts");
  }

  for (const auto& [key, value] : m.items()) {
    const std::string p = Path(param, key);
    if (key == "name" && !value.is_null()) {
      std::string name;
      if (auto e = ReadString(value, p, &name)) return e;
      out->name = std::move(name);
    } else if (key == "tool_call_id" && !value.is_null()) {
      std::string id;
      if (auto e = ReadString(value, p, &id)) return e;
      out->tool_call_id = std::move(id);
    } else if (key == "tool_calls" && !value.is_null()) {
      if (out->role != ChatRole::kAssistant && !(value.is_array() && value.empty())) {
        return InvalidValue(p, "Invalid '" + p + "': only assistant messages carry tool calls.");
      }
      if (auto e = ReadToolCalls(value, p, &out->tool_calls)) return e;
    } else if (key == "reasoning_content" && !value.is_null() && out->role == ChatRole::kAssistant) {
      std::string r;
      if (auto e = ReadString(value, p, &r)) return e;
      out->reasoning_content = std::move(r);
    } else if ((key == "function_call" || key == "audio") && !value.is_null()) {
      return UnsupportedParameter(p, "is not supported by this server.");
    }
    // Other keys (refusal, annotations, ...) are what clients echo back from
    // earlier responses; they carry nothing the prompt needs.
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ReadMessages(const json& v, std::vector<ChatMessage>* out) {
  if (!v.is_array()) return InvalidType("messages", "an array of messages");
  if (v.empty()) {
    ApiError e = InvalidValue("messages", "Invalid 'messages': empty array. Expected at least one message.");
    e.code = "empty_array";
    return e;
  }
  out->resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (auto e = ReadMessage(v[i], Path("messages", i), &(*out)[i])) return e;
  }
  return std::nullopt;
}

}  // namespace internal

namespace {

// Recognised fields of features this server does not have. Each is accepted
// only with its "off" value, so a request never silently loses a constraint.
MaybeError ReadUnsupportedChatField(std::string_view key, const json& v, bool* handled) {
  *handled = true;
  const std::string k(key);
  if (v.is_null()) {
    static constexpr std::string_view kKnown[] = {
        "functions", "function_call", "audio",
        "modalities", "prediction", "web_search_options", "reasoning_effort", "verbosity",
        "store", "metadata", "prompt_cache_key"};
    for (auto n : kKnown) {
      if (n == key) return std::nullopt;
    }
    *handled = false;
    return std::nullopt;
  }
  if (key == "functions") {
    if (v.is_array() && v.empty()) return std::nullopt;
    return UnsupportedParameter(k, "(deprecated) is not supported; use 'tools'.");
  }
  if (key == "function_call") {
    if (v.is_string() && (v == "none" || v == "auto")) return std::nullopt;
    return UnsupportedParameter(k, "(deprecated) is not supported; use 'tool_choice'.");
  }
  if (key == "modalities") {
    if (v.is_array() && v.size() == 1 && v[0] == "text") return std::nullopt;
    return UnsupportedValue(k, "only [\"text\"] is supported.");
  }
  if (key == "store") {
    bool b = false;
    if (auto e = internal::ReadBool(v, k, &b)) return e;
    if (b) return UnsupportedValue(k, "this server does not store completions.");
    return std::nullopt;
  }
  if (key == "metadata") {
    if (!v.is_object()) return InvalidType(k, "an object");
    return std::nullopt;  // tags for stored completions; nothing to tag here
  }
  if (key == "prompt_cache_key") {
    std::string s;
    return internal::ReadString(v, k, &s);  // a routing hint; the prefix cache needs none
  }
  if (key == "audio" || key == "prediction" || key == "web_search_options" || key == "reasoning_effort" ||
      key == "verbosity") {
    return UnsupportedParameter(k, "is not supported by this server.");
  }
  *handled = false;
  return std::nullopt;
}

}  // namespace

ApiResult<ChatCompletionRequest> ParseChatCompletionRequest(std::string_view body, const RequestLimits& limits) {
  auto parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.error();
  auto req = ParseChatCompletionJson(parsed.value(), limits);
  if (req.ok()) internal::RestoreSchemaKeyOrder(body, &req.value().options.structured.response_format, &req.value().tools);
  return req;
}

ApiResult<ChatCompletionRequest> ParseChatCompletionJson(const json& body, const RequestLimits& limits) {
  if (!body.is_object()) return InvalidJson("the top level must be a JSON object.");
  ChatCompletionRequest req;
  bool have_messages = false;
  std::optional<int64_t> top_logprobs;
  for (const auto& [key, value] : body.items()) {
    std::optional<ApiError> error;
    if (internal::ReadGenerationField(key, value, limits, &req.options, &error) ==
        internal::FieldOutcome::kHandled) {
      if (error) return *error;
      continue;
    }
    if (key == "messages") {
      if (auto e = internal::ReadMessages(value, &req.messages)) return *e;
      have_messages = true;
    } else if (key == "logprobs") {
      if (value.is_null()) continue;
      if (auto e = internal::ReadBool(value, key, &req.logprobs)) return *e;
    } else if (key == "tools") {
      if (value.is_null()) continue;
      if (auto e = internal::ReadTools(value, &req.tools)) return *e;
    } else if (key == "tool_choice") {
      if (value.is_null()) continue;
      if (auto e = internal::ReadToolChoice(value, &req.tool_choice)) return *e;
    } else if (key == "parallel_tool_calls") {
      if (value.is_null()) continue;
      if (auto e = internal::ReadBool(value, key, &req.parallel_tool_calls)) return *e;
    } else if (key == "top_logprobs") {
      if (value.is_null()) continue;
      int64_t x;
      if (auto e = internal::ReadInt(value, key, 0, limits.max_top_logprobs, &x)) return *e;
      top_logprobs = x;
    } else {
      bool handled = false;
      if (auto e = ReadUnsupportedChatField(key, value, &handled)) return *e;
      if (!handled && limits.reject_unknown_fields) return UnknownParameter(key);
    }
  }
  if (!have_messages) return MissingParameter("messages");
  if (auto e = internal::CheckToolChoice(req.tools, req.tool_choice)) return *e;
  if (!req.tools.empty() && req.tool_choice.mode != ToolChoiceMode::kNone && req.options.structured.constrained() &&
      (req.tool_choice.mode != ToolChoiceMode::kAuto)) {
    return InvalidValue(req.options.structured.param(),
                        "Invalid '" + std::string(req.options.structured.param()) +
                            "': cannot be combined with tool_choice 'required' or a named function.");
  }
  if (auto e = internal::FinishGenerationOptions(body, &req.options)) return *e;
  if (auto e = internal::CheckMaxTokensPositive(req.options)) return *e;
  if (top_logprobs) {
    if (!req.logprobs) {
      return InvalidValue("top_logprobs", "Invalid 'top_logprobs': 'logprobs' must be true when it is set.");
    }
    req.top_logprobs = static_cast<int>(*top_logprobs);
  }
  return req;
}

}  // namespace pagoda::api
