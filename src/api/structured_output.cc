#include "api/structured_output.h"

#include "api/json_fields.h"
#include "api/tools.h"

namespace pagoda::api {

using nlohmann::json;
using internal::MaybeError;
using internal::Path;

std::string_view StructuredOutput::param() const {
  if (grammar) return "grammar";
  if (regex) return "regex";
  if (response_format.type != ResponseFormatType::kText) return "response_format";
  return "";
}

namespace internal {

namespace {

MaybeError ReadJsonSchemaSpec(const json& v, ResponseFormat* out) {
  const std::string param = "response_format.json_schema";
  if (!v.is_object()) return InvalidType(param, "an object");
  const auto name_it = v.find("name");
  if (name_it == v.end() || name_it->is_null()) return MissingParameter(Path(param, "name"));
  for (const auto& [key, value] : v.items()) {
    const std::string p = Path(param, key);
    if (key == "name") {
      if (auto e = ReadString(value, p, &out->name)) return e;
      if (!ValidFunctionName(out->name)) {
        return InvalidValue(p, "Invalid '" + p + "': a name of 1 to 64 characters a-z, A-Z, 0-9, '_' or '-'.");
      }
    } else if (key == "description") {
      if (value.is_null()) continue;
      std::string d;
      if (auto e = ReadString(value, p, &d)) return e;
      out->description = std::move(d);
    } else if (key == "schema") {
      if (value.is_null()) continue;
      // A boolean schema is valid JSON Schema; the converter decides on it.
      if (!value.is_object() && !value.is_boolean()) return InvalidType(p, "a JSON Schema object");
      out->schema = value;
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

MaybeError ReadResponseFormat(const json& v, ResponseFormat* out) {
  const std::string param = "response_format";
  if (!v.is_object()) return InvalidType(param, "an object");
  const auto t = v.find("type");
  if (t == v.end() || t->is_null()) return MissingParameter("response_format.type");
  std::string type;
  if (auto e = ReadString(*t, "response_format.type", &type)) return e;
  if (type == "text") {
    out->type = ResponseFormatType::kText;
  } else if (type == "json_object") {
    out->type = ResponseFormatType::kJsonObject;
  } else if (type == "json_schema") {
    out->type = ResponseFormatType::kJsonSchema;
    const auto s = v.find("json_schema");
    if (s == v.end() || s->is_null()) return MissingParameter("response_format.json_schema");
    if (auto e = ReadJsonSchemaSpec(*s, out)) return e;
  } else {
    return InvalidValue("response_format.type",
                        "Invalid 'response_format.type': expected 'text', 'json_object' or 'json_schema', got '" +
                            type + "'.");
  }
  for (const auto& [key, value] : v.items()) {
    if (key != "type" && !(key == "json_schema" && out->type == ResponseFormatType::kJsonSchema)) {
      return UnknownParameter(Path(param, key));
    }
  }
  return std::nullopt;
}

MaybeError ReadConstraintText(const json& v, std::string_view param, std::optional<std::string>* out) {
  std::string s;
  if (auto e = ReadString(v, param, &s)) return e;
  if (s.empty()) return InvalidValue(param, "Invalid '" + std::string(param) + "': must not be empty.");
  *out = std::move(s);
  return std::nullopt;
}

void RestoreSchemaKeyOrder(std::string_view body, ResponseFormat* format, std::vector<ToolFunction>* tools) {
  const bool want_schema = format->type == ResponseFormatType::kJsonSchema;
  bool want_tools = false;
  for (const ToolFunction& t : *tools) want_tools |= t.parameters.has_value();
  if (!want_schema && !want_tools) return;
  const auto ordered = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (!ordered.is_object()) return;
  if (want_schema) {
    const auto rf = ordered.find("response_format");
    if (rf != ordered.end() && rf->is_object()) {
      const auto js = rf->find("json_schema");
      if (js != rf->end() && js->is_object()) {
        const auto sc = js->find("schema");
        if (sc != js->end() && !sc->is_null()) format->schema = *sc;
      }
    }
  }
  const auto list = ordered.find("tools");
  if (!want_tools || list == ordered.end() || !list->is_array()) return;
  for (const auto& item : *list) {
    if (!item.is_object()) continue;
    const auto fn = item.find("function");
    if (fn == item.end() || !fn->is_object()) continue;
    const auto name = fn->find("name");
    const auto params = fn->find("parameters");
    if (name == fn->end() || !name->is_string() || params == fn->end() || params->is_null()) continue;
    for (ToolFunction& t : *tools) {
      if (t.name == name->get<std::string>() && t.parameters) t.parameters = *params;
    }
  }
}

MaybeError CheckSingleConstraint(const StructuredOutput& s) {
  const int n = (s.response_format.type != ResponseFormatType::kText) + s.grammar.has_value() + s.regex.has_value();
  if (n <= 1) return std::nullopt;
  return InvalidValue(s.param(), "Only one of 'response_format' (json_object / json_schema), 'grammar' and "
                                 "'regex' may be given.");
}

}  // namespace internal

}  // namespace pagoda::api
