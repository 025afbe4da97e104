// GLM-4.5 tool-call arguments: the model writes each argument as
// <arg_key>K</arg_key><arg_value>V</arg_value>, and its chat template renders
// V as the string itself when the value is a string and as JSON otherwise
// (`v | tojson if v is not string else v`). So V is read back as JSON unless
// the function's parameter schema declares K a string, or V is not valid JSON
// (vLLM's glm4_moe parser decides the same way). Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/tools.h"

namespace pagoda::chat {

// The schema of parameter `key` of function `name` among `tools`; null when
// the function, its parameters or that property is not declared.
const nlohmann::ordered_json* GlmPropertySchema(const std::vector<api::ToolFunction>& tools, std::string_view name,
                                                std::string_view key);

// The JSON text of one argument value `value` whose schema is `property`
// (may be null).
std::string GlmArgumentJson(std::string_view value, const nlohmann::ordered_json* property);

}  // namespace pagoda::chat
