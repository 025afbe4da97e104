// StructuredOutput: the request fields that constrain what the model may
// generate: response_format (text / json_object / json_schema) and the
// extensions `grammar` (GBNF text) and `regex`. Parsed and shape-checked
// here; turning them into a grammar (and rejecting schemas that cannot be
// enforced) is the server's job. Values; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace pagoda::api {

enum class ResponseFormatType { kText, kJsonObject, kJsonSchema };

struct ResponseFormat {
  ResponseFormatType type = ResponseFormatType::kText;
  // json_schema only: json_schema.{name, description, schema, strict}.
  std::string name;
  std::optional<std::string> description;
  // Order-preserving: the properties order is the order the output follows.
  nlohmann::ordered_json schema = nlohmann::ordered_json::object();  // {} when absent
  bool strict = false;
};

struct StructuredOutput {
  ResponseFormat response_format;
  std::optional<std::string> grammar;  // GBNF, root rule "root"
  std::optional<std::string> regex;

  // True when any of the three constrains the output.
  bool constrained() const {
    return response_format.type != ResponseFormatType::kText || grammar.has_value() || regex.has_value();
  }
  // The request field that sets the constraint ("response_format", "grammar",
  // "regex"), "" when unconstrained.
  std::string_view param() const;
};

struct ToolFunction;

namespace internal {

// "response_format": {"type": "text" | "json_object" | "json_schema", ...}.
std::optional<ApiError> ReadResponseFormat(const nlohmann::json& v, ResponseFormat* out);
// "grammar" / "regex": a non-empty string.
std::optional<ApiError> ReadConstraintText(const nlohmann::json& v, std::string_view param,
                                           std::optional<std::string>* out);
// nlohmann::json sorts object keys, but a schema's properties order is the
// order the generated object follows: takes response_format's schema and the
// tools' parameters again from an order-preserving parse of the body. Call
// after the request parsed without error (the shapes are then known good).
void RestoreSchemaKeyOrder(std::string_view body, ResponseFormat* format, std::vector<ToolFunction>* tools);
// At most one of response_format (non-text), grammar and regex.
std::optional<ApiError> CheckSingleConstraint(const StructuredOutput& s);

}  // namespace internal

}  // namespace pagoda::api
