// From a request's structured-output fields to the GBNF text the decoder
// enforces: response_format json_object / json_schema (JsonSchemaToGbnf),
// `grammar` (as given), `regex` (RegexToGbnf), or a forced tool call
// (tool_grammar.h); for reasoning models, how the reasoning block before the
// answer is left free (delay_until when the prompt opened it, else an
// optional block in the grammar). Pure; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/structured_output.h"
#include "api/tools.h"
#include "base/status.h"
#include "chat/chat_format.h"

namespace pagoda::chat {

struct ConstraintRequest {
  api::StructuredOutput structured;
  std::vector<api::ToolFunction> tools;  // chat only
  api::ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  // Chat requests: the model's format and whether the prompt opened a
  // reasoning block. Unset for /v1/completions (the text is the answer).
  std::optional<ChatFormat> format;
  bool reasoning_open = false;
};

struct ConstraintSpec {
  std::string gbnf;
  std::string root;         // the start rule
  std::string delay_until;  // "" or the marker after which the grammar applies
  std::string param;        // the request field it came from, for errors
};

// True when tool_choice forces a call ("required" or a named function).
bool ForcesToolCall(const ConstraintRequest& r);

// The request field a constraint error is about: "tools", "response_format",
// "grammar" or "regex".
std::string ConstraintParam(const ConstraintRequest& r);

// std::nullopt when nothing constrains the output. Errors: InvalidArgument
// from the converters (an unsupported keyword is named in the message).
Result<std::optional<ConstraintSpec>> BuildConstraint(const ConstraintRequest& r);

}  // namespace pagoda::chat
