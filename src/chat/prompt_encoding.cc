#include "chat/prompt_encoding.h"

#include "chat/chat_render.h"

namespace pagoda::chat {

Result<PromptEncoder> MakePromptEncoder(const Tokenizer& tokenizer, const std::string& chat_template_source) {
  auto tmpl = ChatTemplate::Parse(chat_template_source);
  if (!tmpl.ok()) return tmpl.status().WithContext("chat template");
  PromptEncoder e;
  e.tokenizer = &tokenizer;
  e.chat_template = std::move(tmpl).value();
  std::vector<std::string> vocab_markers;
  for (const char* m : {"<think>", "</think>"}) {
    if (tokenizer.FindToken(m) != kNoToken) vocab_markers.emplace_back(m);
  }
  e.format = DetectChatFormat(e.chat_template->source(), vocab_markers);
  if (tokenizer.bos() >= 0) e.specials.bos_token = tokenizer.token_text(tokenizer.bos());
  if (tokenizer.eos() >= 0) e.specials.eos_token = tokenizer.token_text(tokenizer.eos());
  return e;
}

const std::vector<api::ToolFunction>& PromptTools(const api::ChatCompletionRequest& request) {
  static const std::vector<api::ToolFunction> kNoTools;
  return request.tool_choice.mode == api::ToolChoiceMode::kNone ? kNoTools : request.tools;
}

api::ApiResult<std::vector<TokenId>> EncodeChatPrompt(const PromptEncoder& encoder,
                                                      const std::vector<api::ChatMessage>& messages,
                                                      bool add_generation_prompt,
                                                      const std::vector<api::ToolFunction>& tools,
                                                      std::string* prompt_text) {
  const TemplateInput in = BuildTemplateInput(messages, tools, encoder.format);
  auto text = ApplyChatTemplate(*encoder.chat_template, in.messages, in.tools, add_generation_prompt,
                                encoder.specials);
  if (!text.ok()) {
    // raise_exception() in a template is the template rejecting the conversation.
    if (text.status().code() == StatusCode::kInvalidArgument) {
      return api::InvalidValue("messages", "The chat template rejected the messages: " + text.status().message());
    }
    return api::ServerError("chat template failed: " + text.status().message());
  }
  if (prompt_text) *prompt_text = *text;
  const Tokenizer& tok = *encoder.tokenizer;
  std::vector<TokenId> ids = tok.Encode(*text, /*add_special=*/false, /*parse_special=*/true);
  if (tok.add_bos() && tok.bos() >= 0 && (ids.empty() || ids.front() != tok.bos())) {
    ids.insert(ids.begin(), tok.bos());
  }
  if (ids.empty()) return api::InvalidValue("messages", "The messages render to an empty prompt.");
  return ids;
}

api::ApiResult<std::vector<TokenId>> EncodeTextPrompt(const PromptEncoder& encoder, const std::string& text) {
  const Tokenizer& tok = *encoder.tokenizer;
  std::vector<TokenId> ids = tok.Encode(text, /*add_special=*/true, /*parse_special=*/true);
  if (ids.empty()) {
    if (tok.bos() < 0) return api::InvalidValue("prompt", "The prompt is empty and the model has no BOS token.");
    ids.push_back(tok.bos());
  }
  return ids;
}

}  // namespace pagoda::chat
