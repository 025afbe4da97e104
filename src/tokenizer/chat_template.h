// ChatTemplate: a model's chat template (the Jinja in GGUF
// `tokenizer.chat_template`, or tokenizer_config.json's `chat_template`),
// parsed once and rendered per request into the prompt text, as transformers'
// apply_chat_template does (trim_blocks and lstrip_blocks on, tojson without
// ASCII escaping). The interpreter is a Jinja subset (src/tokenizer/jinja/);
// docs/CHAT_TEMPLATES.md lists what it supports and where it differs.
//
// A ChatTemplate is immutable after Parse: any thread may Render it, and
// copies share the parsed tree.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace pagoda {

class GgufMetadata;
namespace jinja {
struct Program;
}

struct ChatTemplateOptions {
  // Limits that stop runaway templates with kResourceExhausted.
  uint64_t max_steps = 10'000'000;
  size_t max_output_bytes = 64u << 20;
  int max_call_depth = 64;
  // The local time strftime_now() formats; unset: the system clock. Tests
  // inject a fixed time here.
  std::function<std::tm()> now;
};

class ChatTemplate {
 public:
  // kInvalidArgument with the line on a syntax error.
  static Result<ChatTemplate> Parse(std::string source);

  // Renders with `context` (a JSON object) as the template's variables.
  // Object keys keep their order (ordered_json), so tojson prints tool
  // schemas as given. Errors: raise_exception() and type errors are
  // kInvalidArgument, exceeded limits kResourceExhausted.
  Result<std::string> Render(const nlohmann::ordered_json& context, const ChatTemplateOptions& options = {}) const;

  const std::string& source() const { return source_; }

 private:
  ChatTemplate(std::string source, std::shared_ptr<const jinja::Program> program);

  std::string source_;
  std::shared_ptr<const jinja::Program> program_;
};

struct ChatTemplateSpecials {
  std::string bos_token;
  std::string eos_token;
};

// The variables transformers passes: messages, tools (None when null),
// documents (None), add_generation_prompt, bos_token, eos_token, then every
// key of `extra_kwargs` (e.g. enable_thinking), which may override them.
Result<std::string> ApplyChatTemplate(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                      const ChatTemplateSpecials& specials,
                                      const nlohmann::ordered_json& extra_kwargs = nlohmann::ordered_json::object(),
                                      const ChatTemplateOptions& options = {});

// ChatML, used when a model has no template (as llama.cpp does).
std::string_view DefaultChatTemplate();

// The GGUF's `tokenizer.chat_template`, or `tokenizer.chat_template.<name>`
// when `name` is given; DefaultChatTemplate() when the key is absent.
std::string ChatTemplateSource(const GgufMetadata& metadata, std::string_view name = {});

}  // namespace pagoda
