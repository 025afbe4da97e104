#include "chat/chat_render.h"

namespace pagoda::chat {

using Json = nlohmann::ordered_json;

namespace {

Json ToolJson(const api::ToolFunction& t) {
  Json f;
  f["name"] = t.name;
  if (t.description) f["description"] = *t.description;
  if (t.parameters) f["parameters"] = *t.parameters;
  Json j;
  j["type"] = "function";
  j["function"] = std::move(f);
  return j;
}

Json Arguments(const std::string& text, bool as_object) {
  if (!as_object) return text;
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? Json(text) : j;
}

// A call in the generic syntax: {"name": ..., "arguments": ...}.
std::string GenericCallText(const api::ToolCall& c) {
  Json j;
  j["name"] = c.name;
  j["arguments"] = Arguments(c.arguments, true);
  return j.dump();
}

std::string CallExample(ToolDialect d) {
  switch (d) {
    case ToolDialect::kHermes:
      return "<tool_call>\n{\"name\": <function name>, \"arguments\": <arguments object>}\n</tool_call>";
    case ToolDialect::kLlama3: return "{\"name\": <function name>, \"parameters\": <arguments object>}";
    case ToolDialect::kMistral: return "[TOOL_CALLS][{\"name\": <function name>, \"arguments\": <arguments object>}]";
    case ToolDialect::kDeepSeekV3:
      return "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c><\xef\xbd\x9ctool\xe2\x96\x81"
             "call\xe2\x96\x81" "begin\xef\xbd\x9c>function<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c><function "
             "name>\n```json\n<arguments object>\n```<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81"
             "end\xef\xbd\x9c><\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>";
    case ToolDialect::kKimiK2:
      return "<|tool_calls_section_begin|><|tool_call_begin|>functions.<function name>:<call index>"
             "<|tool_call_argument_begin|><arguments object><|tool_call_end|><|tool_calls_section_end|>";
    case ToolDialect::kGlm45:
      return "<tool_call><function name>\n<arg_key><argument name></arg_key>\n<arg_value><argument value>"
             "</arg_value>\n</tool_call>";
    case ToolDialect::kGeneric: break;
  }
  return "{\"name\": <function name>, \"arguments\": <arguments object>}";
}

}  // namespace

std::string ToolSystemPrompt(const std::vector<api::ToolFunction>& tools, const ChatFormat& format) {
  std::string s = "You can call the following functions:\n";
  for (const auto& t : tools) s += ToolJson(t).dump() + "\n";
  s += "\nTo call a function, reply with only:\n" + CallExample(format.dialect) + "\n";
  return s;
}

TemplateInput BuildTemplateInput(const std::vector<api::ChatMessage>& messages,
                                 const std::vector<api::ToolFunction>& tools, const ChatFormat& format) {
  TemplateInput in;
  const bool describe_tools = !tools.empty() && !format.template_renders_tools;
  const bool fold_calls = format.dialect == ToolDialect::kGeneric && !format.template_renders_tools;
  if (describe_tools) {
    // Into the first system message, or a new one in front.
    const std::string prompt = ToolSystemPrompt(tools, format);
    const bool has_system = !messages.empty() && (messages[0].role == api::ChatRole::kSystem ||
                                                  messages[0].role == api::ChatRole::kDeveloper);
    if (!has_system) {
      Json j;
      j["role"] = "system";
      j["content"] = prompt;
      in.messages.push_back(std::move(j));
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const api::ChatMessage& m = messages[i];
    Json j;
    j["role"] = api::ChatRoleName(m.role);
    std::string content = m.content;
    if (describe_tools && i == 0 && (m.role == api::ChatRole::kSystem || m.role == api::ChatRole::kDeveloper)) {
      content += "\n\n" + ToolSystemPrompt(tools, format);
    }
    if (fold_calls && !m.tool_calls.empty()) {
      for (const auto& c : m.tool_calls) {
        if (!content.empty()) content += "\n";
        content += GenericCallText(c);
      }
      j["content"] = content;
    } else if (m.content_null && !m.tool_calls.empty() && format.keeps_null_content) {
      j["content"] = nullptr;
    } else {
      j["content"] = content;
    }
    if (m.name) j["name"] = *m.name;
    if (m.tool_call_id) j["tool_call_id"] = *m.tool_call_id;
    if (m.reasoning_content) j["reasoning_content"] = *m.reasoning_content;
    if (!m.tool_calls.empty() && !fold_calls) {
      Json calls = Json::array();
      for (const auto& c : m.tool_calls) {
        Json call;
        call["id"] = c.id;
        call["type"] = "function";
        call["function"]["name"] = c.name;
        call["function"]["arguments"] = Arguments(c.arguments, format.arguments_as_object);
        calls.push_back(std::move(call));
      }
      j["tool_calls"] = std::move(calls);
    }
    in.messages.push_back(std::move(j));
  }
  if (!tools.empty() && format.template_renders_tools) {
    in.tools = Json::array();
    for (const auto& t : tools) in.tools.push_back(ToolJson(t));
  }
  return in;
}

}  // namespace pagoda::chat
