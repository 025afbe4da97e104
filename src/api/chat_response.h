// Responses of POST /v1/chat/completions in OpenAI's shapes:
// ChatCompletion ("chat.completion") and ChatCompletionChunk
// ("chat.completion.chunk", one SSE event each). ChatStreamFormatter makes
// the whole event sequence of a stream from the engine's increments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/response_common.h"
#include "api/tools.h"

namespace pagoda::api {

struct ChatChoice {
  int index = 0;
  std::string content;  // null on the wire when empty and there are tool calls
  FinishReason finish_reason = FinishReason::kStop;
  std::optional<std::vector<TokenLogprob>> logprobs;  // when the request asked for logprobs
  std::optional<std::string> reasoning_content;  // the text between the thinking markers
  std::vector<ToolCall> tool_calls;
};

struct ChatCompletion {
  std::string id;  // NewResponseId("chatcmpl")
  int64_t created = 0;
  std::string model;
  std::string system_fingerprint;
  std::vector<ChatChoice> choices;
  Usage usage;

  nlohmann::json ToJson() const;
};

struct ChatChunkChoice {
  int index = 0;
  std::optional<std::string> role;     // "assistant" in a choice's first chunk
  std::optional<std::string> content;  // absent in the final chunk's empty delta
  std::optional<std::string> reasoning_content;
  std::vector<ToolCallDelta> tool_calls;
  std::optional<FinishReason> finish_reason;
  std::optional<std::vector<TokenLogprob>> logprobs;
};

struct ChatCompletionChunk {
  std::string id;  // the same in every chunk of a stream
  int64_t created = 0;
  std::string model;
  std::string system_fingerprint;
  std::vector<ChatChunkChoice> choices;  // [] in the usage chunk
  // With stream_options.include_usage every chunk carries "usage": null and
  // the last one the totals; without it the field is left out.
  bool usage_field = false;
  std::optional<Usage> usage;

  nlohmann::json ToJson() const;
};

// {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}], "refusal": null}
nlohmann::json ChatLogprobsToJson(const std::vector<TokenLogprob>& tokens);

// What one step of a choice adds: answer text, reasoning text, tool-call
// pieces (each may be empty).
struct ChatDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

// The SSE payloads of one chat stream, in order, per choice:
// RoleChunk, ContentChunk..., FinishChunk; then UsageChunk (when
// include_usage) and finally kSseDone. Thread-compatible (const methods).
class ChatStreamFormatter {
 public:
  ChatStreamFormatter(std::string id, int64_t created, std::string model, std::string system_fingerprint,
                      bool include_usage);

  std::string RoleChunk(int index) const;  // delta {"role": "assistant", "content": ""}
  std::string ContentChunk(int index, std::string_view text,
                           const std::vector<TokenLogprob>* logprobs = nullptr) const;
  // Content, reasoning_content and tool_calls of `delta` (those non-empty).
  std::string DeltaChunk(int index, const ChatDelta& delta, const std::vector<TokenLogprob>* logprobs = nullptr) const;
  std::string FinishChunk(int index, FinishReason reason) const;  // empty delta
  std::string UsageChunk(const Usage& usage) const;             // choices: []
  bool include_usage() const { return include_usage_; }

 private:
  ChatCompletionChunk Base() const;

  std::string id_;
  int64_t created_;
  std::string model_;
  std::string system_fingerprint_;
  bool include_usage_;
};

}  // namespace pagoda::api
