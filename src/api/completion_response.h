// Responses of POST /v1/completions in OpenAI's shapes: Completion and
// CompletionChunk (both "text_completion"), plus CompletionStreamFormatter for
// the SSE event sequence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/response_common.h"

namespace pagoda::api {

// Completions logprobs: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
// text_offset counts bytes from the start of the choice's text, beginning at
// `text_offset_start` (0 with echo, else the prompt's length in bytes).
struct CompletionLogprobs {
  std::vector<TokenLogprob> tokens;
  int64_t text_offset_start = 0;
  nlohmann::json ToJson() const;
};

struct CompletionChoice {
  int index = 0;  // prompt_index * n + choice number
  std::string text;
  std::optional<FinishReason> finish_reason;  // always set in a Completion; null mid-stream
  std::optional<CompletionLogprobs> logprobs;
};

struct Completion {
  std::string id;  // NewResponseId("cmpl")
  int64_t created = 0;
  std::string model;
  std::string system_fingerprint;
  std::vector<CompletionChoice> choices;
  Usage usage;
  nlohmann::json ToJson() const;
};

struct CompletionChunk {
  std::string id;
  int64_t created = 0;
  std::string model;
  std::string system_fingerprint;
  std::vector<CompletionChoice> choices;  // [] in the usage chunk
  bool usage_field = false;               // see ChatCompletionChunk
  std::optional<Usage> usage;
  nlohmann::json ToJson() const;
};

// Per choice: TextChunk... then FinishChunk; then UsageChunk (when
// include_usage) and kSseDone.
class CompletionStreamFormatter {
 public:
  CompletionStreamFormatter(std::string id, int64_t created, std::string model, std::string system_fingerprint,
                            bool include_usage);

  std::string TextChunk(int index, std::string_view text, const CompletionLogprobs* logprobs = nullptr) const;
  std::string FinishChunk(int index, FinishReason reason) const;  // text ""
  std::string UsageChunk(const Usage& usage) const;
  bool include_usage() const { return include_usage_; }

 private:
  CompletionChunk Base() const;

  std::string id_;
  int64_t created_;
  std::string model_;
  std::string system_fingerprint_;
  bool include_usage_;
};

}  // namespace pagoda::api
