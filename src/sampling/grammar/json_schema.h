// JSON Schema to GBNF text: the grammar of the JSON documents, in a fixed
// compact layout, that validate against the schema. What is supported, the
// layout and the errors are in docs/STRUCTURED_OUTPUTS.md. Pure text
// generation: no shared state, callable from any thread.
//
// A keyword the grammar cannot enforce is InvalidArgument naming the keyword
// and its location ("... 'multipleOf' at #/properties/n"), never ignored;
// annotations (title, description, default, examples, ...) are ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace pagoda::grammar {

struct JsonSchemaOptions {
  // Name of the rule that matches a whole document. Every other rule is named
  // root_name + "-" + ..., so grammars for several schemas can be joined into
  // one (e.g. one per tool's arguments). [a-zA-Z0-9-]+.
  std::string root_name = "root";
  // An object schema without "additionalProperties" admits no extra keys, as
  // OpenAI's strict structured outputs. Otherwise JSON Schema's default holds:
  // extra keys with any value may follow the declared ones.
  bool strict = false;
};

// Key order (properties are written in schema order) is the iteration order
// of the object: parse request bodies as ordered_json to keep the client's
// order; a plain nlohmann::json has its keys sorted.
Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema,
                                     const JsonSchemaOptions& opts = {});
Result<std::string> JsonSchemaToGbnf(const nlohmann::json& schema,
                                     const JsonSchemaOptions& opts = {});

}  // namespace pagoda::grammar
