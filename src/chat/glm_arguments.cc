#include "chat/glm_arguments.h"

namespace pagoda::chat {

namespace {

using Json = nlohmann::ordered_json;

// Whether the schema admits only strings ("string", or ["string"] / ["string", "null"]).
bool DeclaredString(const Json& property) {
  if (!property.is_object() || !property.contains("type")) return false;
  const Json& t = property["type"];
  if (t.is_string()) return t.get<std::string>() == "string";
  if (!t.is_array() || t.empty()) return false;
  bool has_string = false;
  for (const Json& e : t) {
    if (!e.is_string()) return false;
    const std::string s = e.get<std::string>();
    if (s == "string") {
      has_string = true;
    } else if (s != "null") {
      return false;
    }
  }
  return has_string;
}

std::string_view Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

const Json* GlmPropertySchema(const std::vector<api::ToolFunction>& tools, std::string_view name,
                              std::string_view key) {
  for (const api::ToolFunction& t : tools) {
    if (t.name != name || !t.parameters || !t.parameters->is_object()) continue;
    const auto props = t.parameters->find("properties");
    if (props == t.parameters->end() || !props->is_object()) return nullptr;
    const auto p = props->find(std::string(key));
    return p == props->end() ? nullptr : &*p;
  }
  return nullptr;
}

std::string GlmArgumentJson(std::string_view value, const Json* property) {
  if (property == nullptr || !DeclaredString(*property)) {
    const std::string_view text = Trim(value);
    if (!text.empty() && Json::accept(text)) return std::string(text);
  }
  // Model output may hold invalid UTF-8; it is replaced, never thrown on.
  return Json(std::string(value)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace pagoda::chat
