// Tool calling in the chat API: function definitions (`tools`), the
// `tool_choice` policy, and tool calls as they appear in assistant messages
// (request) and in responses, including the streamed delta shape. Values;
// any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api_error.h"

namespace pagoda::api {

// tools[i]: {"type": "function", "function": {name, description, parameters, strict}}
struct ToolFunction {
  std::string name;  // [a-zA-Z0-9_-]{1,64}
  std::optional<std::string> description;
  std::optional<nlohmann::ordered_json> parameters;  // a JSON Schema object (key order kept); absent: none
  bool strict = false;
};

enum class ToolChoiceMode { kNone, kAuto, kRequired, kFunction };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kAuto;
  std::string function;  // kFunction: the function's name
};

// A complete call: in an assistant message of the request, or in a response.
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, as generated (or as the client sent it)
};

// One streamed piece of a call (delta.tool_calls[j]): the first piece of a
// call has id and name, later ones only argument text.
struct ToolCallDelta {
  int index = 0;  // which call of the choice
  std::optional<std::string> id;
  std::optional<std::string> name;
  std::string arguments;
};

// {"id", "type": "function", "function": {"name", "arguments"}}
nlohmann::json ToolCallToJson(const ToolCall& call);
// {"index", ["id", "type",] "function": {["name",] "arguments"}}
nlohmann::json ToolCallDeltaToJson(const ToolCallDelta& delta);

namespace internal {

// OpenAI names (tools[].function.name, response_format.json_schema.name): ^[a-zA-Z0-9_-]{1,64}$.
bool ValidFunctionName(std::string_view name);

std::optional<ApiError> ReadTools(const nlohmann::json& v, std::vector<ToolFunction>* out);
std::optional<ApiError> ReadToolChoice(const nlohmann::json& v, ToolChoice* out);
// An assistant message's "tool_calls" (param e.g. "messages[2].tool_calls").
std::optional<ApiError> ReadToolCalls(const nlohmann::json& v, const std::string& param, std::vector<ToolCall>* out);
// tool_choice against tools: required/named need tools; the name must exist.
std::optional<ApiError> CheckToolChoice(const std::vector<ToolFunction>& tools, const ToolChoice& choice);

}  // namespace internal

}  // namespace pagoda::api
