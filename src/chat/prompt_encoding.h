// PromptEncoder: from a request's conversation or completion prompt to the
// token ids the engine runs: chat template (with the tools rendered as the
// detected chat format wants), BOS rules, special-token parsing. The ONE
// implementation of prompt encoding: `pagoda serve` encodes every request
// with it (server/request_prep.h) and the gateway predicts the engine's
// tokens with it (gateway/request_tokenizer.h), so the two cannot drift.
// Immutable after MakePromptEncoder; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/chat_request.h"
#include "api/tools.h"
#include "base/status.h"
#include "chat/chat_format.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::chat {

struct PromptEncoder {
  const Tokenizer* tokenizer = nullptr;  // borrowed; outlives the encoder
  std::optional<ChatTemplate> chat_template;
  ChatTemplateSpecials specials;  // bos_token / eos_token texts for the template
  ChatFormat format;              // tool-call / reasoning dialect of the template
};

// Parses the template (ChatTemplateSource of the GGUF) and derives the
// specials and the chat format from it and the vocabulary.
Result<PromptEncoder> MakePromptEncoder(const Tokenizer& tokenizer, const std::string& chat_template_source);

// The tools that go into the prompt: none with tool_choice "none".
const std::vector<api::ToolFunction>& PromptTools(const api::ChatCompletionRequest& request);

// Renders `messages` with the chat template and encodes it; BOS is added
// when the model wants one and the template did not. `tools`: offered to
// the model (chat_render.h). `prompt_text`, when given, receives the
// rendered text. A template that rejects the conversation is a 400 on
// "messages"; one that fails otherwise a 500.
api::ApiResult<std::vector<TokenId>> EncodeChatPrompt(const PromptEncoder& encoder,
                                                      const std::vector<api::ChatMessage>& messages,
                                                      bool add_generation_prompt = true,
                                                      const std::vector<api::ToolFunction>& tools = {},
                                                      std::string* prompt_text = nullptr);

// A completion prompt's text with BOS as the model asks; BOS alone when empty.
api::ApiResult<std::vector<TokenId>> EncodeTextPrompt(const PromptEncoder& encoder, const std::string& text);

}  // namespace pagoda::chat
