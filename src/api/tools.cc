#include "api/tools.h"

#include "api/json_fields.h"

namespace pagoda::api {

using nlohmann::json;
using internal::MaybeError;
using internal::Path;

json ToolCallToJson(const ToolCall& call) {
  return json{{"id", call.id},
              {"type", "function"},
              {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

json ToolCallDeltaToJson(const ToolCallDelta& d) {
  json j{{"index", d.index}};
  if (d.id) {
    j["id"] = *d.id;
    j["type"] = "function";
  }
  json f = json::object();
  if (d.name) f["name"] = *d.name;
  f["arguments"] = d.arguments;
  j["function"] = std::move(f);
  return j;
}

namespace internal {

bool ValidFunctionName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

MaybeError ReadFunction(const json& v, const std::string& param, ToolFunction* out) {
  if (!v.is_object()) return InvalidType(param, "an object");
  const auto name_it = v.find("name");
  if (name_it == v.end() || name_it->is_null()) return MissingParameter(Path(param, "name"));
  for (const auto& [key, value] : v.items()) {
    const std::string p = Path(param, key);
    if (key == "name") {
      if (auto e = ReadString(value, p, &out->name)) return e;
      if (!ValidFunctionName(out->name)) {
        return InvalidValue(p, "Invalid '" + p + "': '" + out->name +
                                   "' does not match '^[a-zA-Z0-9_-]{1,64}$'.");
      }
    } else if (key == "description") {
      if (value.is_null()) continue;
      std::string d;
      if (auto e = ReadString(value, p, &d)) return e;
      out->description = std::move(d);
    } else if (key == "parameters") {
      if (value.is_null()) continue;
      if (!value.is_object()) return InvalidType(p, "a JSON Schema object");
      out->parameters = value;
    } else if (key == "strict") {
      if (value.is_null()) continue;
      if (auto e = ReadBool(value, p, &out->strict)) return e;
    } else {
      return UnknownParameter(p);
    }
  }
  return std::nullopt;
}

}  // namespace

MaybeError ReadTools(const json& v, std::vector<ToolFunction>* out) {
  if (!v.is_array()) return InvalidType("tools", "an array of tools");
  if (v.size() > 128) return InvalidValue("tools", "Invalid 'tools': at most 128 tools are allowed.");
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string param = Path("tools", i);
    const json& t = v[i];
    if (!t.is_object()) return InvalidType(param, "an object");
    const auto type_it = t.find("type");
    if (type_it == t.end() || type_it->is_null()) return MissingParameter(Path(param, "type"));
    std::string type;
    if (auto e = ReadString(*type_it, Path(param, "type"), &type)) return e;
    if (type != "function") {
      return UnsupportedValue(Path(param, "type"), "tools of type '" + type + "' are not supported; only 'function' is.");
    }
    const auto f = t.find("function");
    if (f == t.end() || f->is_null()) return MissingParameter(Path(param, "function"));
    for (const auto& [key, value] : t.items()) {
      if (key != "type" && key != "function") return UnknownParameter(Path(param, key));
    }
    ToolFunction fn;
    if (auto e = ReadFunction(*f, Path(param, "function"), &fn)) return e;
    for (const ToolFunction& other : *out) {
      if (other.name == fn.name) {
        return InvalidValue(Path(param, "function.name"), "Invalid 'tools': the function name '" + fn.name +
                                                              "' appears more than once.");
      }
    }
    out->push_back(std::move(fn));
  }
  return std::nullopt;
}

MaybeError ReadToolChoice(const json& v, ToolChoice* out) {
  const std::string param = "tool_choice";
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "none") out->mode = ToolChoiceMode::kNone;
    else if (s == "auto") out->mode = ToolChoiceMode::kAuto;
    else if (s == "required") out->mode = ToolChoiceMode::kRequired;
    else return InvalidValue(param, "Invalid 'tool_choice': expected 'none', 'auto', 'required' or an object.");
    return std::nullopt;
  }
  if (!v.is_object()) return InvalidType(param, "a string or an object");
  const auto type_it = v.find("type");
  if (type_it == v.end()) return MissingParameter("tool_choice.type");
  std::string type;
  if (auto e = ReadString(*type_it, "tool_choice.type", &type)) return e;
  if (type != "function") {
    return UnsupportedValue("tool_choice.type", "only 'function' is supported.");
  }
  const auto f = v.find("function");
  if (f == v.end() || !f->is_object()) return MissingParameter("tool_choice.function");
  const auto n = f->find("name");
  if (n == f->end()) return MissingParameter("tool_choice.function.name");
  if (auto e = ReadString(*n, "tool_choice.function.name", &out->function)) return e;
  out->mode = ToolChoiceMode::kFunction;
  return std::nullopt;
}

MaybeError ReadToolCalls(const json& v, const std::string& param, std::vector<ToolCall>* out) {
  if (!v.is_array()) return InvalidType(param, "an array of tool calls");
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = Path(param, i);
    const json& c = v[i];
    if (!c.is_object()) return InvalidType(p, "an object");
    ToolCall call;
    const auto id = c.find("id");
    if (id == c.end() || id->is_null()) return MissingParameter(Path(p, "id"));
    if (auto e = ReadString(*id, Path(p, "id"), &call.id)) return e;
    const auto type = c.find("type");
    if (type != c.end() && !type->is_null() && *type != "function") {
      return UnsupportedValue(Path(p, "type"), "only 'function' tool calls are supported.");
    }
    const auto f = c.find("function");
    if (f == c.end() || !f->is_object()) return MissingParameter(Path(p, "function"));
    const auto name = f->find("name");
    if (name == f->end()) return MissingParameter(Path(p, "function.name"));
    if (auto e = ReadString(*name, Path(p, "function.name"), &call.name)) return e;
    const auto args = f->find("arguments");
    if (args == f->end()) return MissingParameter(Path(p, "function.arguments"));
    if (auto e = ReadString(*args, Path(p, "function.arguments"), &call.arguments)) return e;
    out->push_back(std::move(call));
  }
  return std::nullopt;
}

MaybeError CheckToolChoice(const std::vector<ToolFunction>& tools, const ToolChoice& choice) {
  if (choice.mode == ToolChoiceMode::kRequired && tools.empty()) {
    return InvalidValue("tool_choice", "Invalid 'tool_choice': 'required' needs at least one tool in 'tools'.");
  }
  if (choice.mode == ToolChoiceMode::kFunction) {
    for (const ToolFunction& t : tools) {
      if (t.name == choice.function) return std::nullopt;
    }
    return InvalidValue("tool_choice", "Invalid 'tool_choice': no function named '" + choice.function +
                                           "' in 'tools'.");
  }
  return std::nullopt;
}

}  // namespace internal

}  // namespace pagoda::api
