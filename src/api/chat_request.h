// ChatCompletionRequest: POST /v1/chat/completions, parsed and validated from
// the JSON body. Content-part arrays are flattened to text here, so the chat
// template sees one string per message.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/api_error.h"
#include "api/generation_options.h"
#include "api/tools.h"

namespace pagoda::api {

enum class ChatRole { kSystem, kDeveloper, kUser, kAssistant, kTool };

// "system", "developer", "user", "assistant", "tool"
const char* ChatRoleName(ChatRole role);

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  // A string, or the "text" parts of a content array joined with "\n".
  // "" for an assistant message whose content was null (content_null).
  std::string content;
  bool content_null = false;
  std::optional<std::string> name;
  std::optional<std::string> tool_call_id;  // tool messages
  std::vector<ToolCall> tool_calls;          // assistant messages
  std::optional<std::string> reasoning_content;  // assistant messages (echoed back)
};

struct ChatCompletionRequest {
  GenerationOptions options;
  std::vector<ChatMessage> messages;  // at least one
  bool logprobs = false;
  int top_logprobs = 0;  // [0, limits.max_top_logprobs]; needs logprobs
  std::vector<ToolFunction> tools;
  ToolChoice tool_choice;  // auto unless given
  bool parallel_tool_calls = true;
};

ApiResult<ChatCompletionRequest> ParseChatCompletionRequest(std::string_view body, const RequestLimits& limits = {});
ApiResult<ChatCompletionRequest> ParseChatCompletionJson(const nlohmann::json& body,
                                                            const RequestLimits& limits = {});

namespace internal {
// "messages": a non-empty array of message objects.
std::optional<ApiError> ReadMessages(const nlohmann::json& v, std::vector<ChatMessage>* out);
}  // namespace internal

}  // namespace pagoda::api
