// The request's conversation as the chat template sees it: messages (with
// tool_calls, tool_call_id, reasoning_content) and `tools`, shaped the way
// the detected template expects (arguments as an object or a JSON string,
// null content kept or made ""). For templates without tool syntax the tools
// are described in a system message and earlier calls are written into the
// assistant's content in the generic JSON form. Pure; any thread.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat_request.h"
#include "api/tools.h"
#include "chat/chat_format.h"

namespace pagoda::chat {

struct TemplateInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null when no tools go to the template
};

// `tools`: the tools offered this turn (empty with tool_choice "none").
TemplateInput BuildTemplateInput(const std::vector<api::ChatMessage>& messages,
                                 const std::vector<api::ToolFunction>& tools, const ChatFormat& format);

// The system text that describes `tools` and the call syntax of `format`,
// for templates that do not render tools themselves.
std::string ToolSystemPrompt(const std::vector<api::ToolFunction>& tools, const ChatFormat& format);

}  // namespace pagoda::chat
