// RequestTokenizer: a request's prompt tokens exactly as the engine behind
// the gateway will see them, so that the gateway's block chain (block_hasher.h)
// names the blocks the engine caches. The tokenizer and chat template come
// from the model's GGUF metadata (the weights are never read), the body is
// parsed with the api layer's request parsers, and the encoding is the
// server's own (chat/prompt_encoding.h): one implementation for both.
// Immutable after construction; Tokens() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/prompt_encoding.h"
#include "gguf/gguf_metadata.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::gateway {

class RequestTokenizer {
 public:
  // Opens the GGUF, builds its tokenizer and chat template and closes it.
  static Result<std::unique_ptr<RequestTokenizer>> FromGguf(const std::string& path);
  static Result<std::unique_ptr<RequestTokenizer>> FromMetadata(const GgufMetadata& metadata);

  // `path`: "/v1/chat/completions" (messages through the chat template, with
  // the tools unless tool_choice is "none") or "/v1/completions" (the first
  // prompt: its text with BOS as the model asks, or its token ids as given).
  // An unparsable body, an unknown path or a template that fails is an
  // error: the router then matches on the prompt text only.
  Result<std::vector<int32_t>> Tokens(std::string_view path, std::string_view body) const;

  const Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  RequestTokenizer() = default;
  std::unique_ptr<Tokenizer> tokenizer_;
  chat::PromptEncoder encoder_;
};

}  // namespace pagoda::gateway
