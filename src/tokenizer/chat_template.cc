#include "tokenizer/chat_template.h"

#include "gguf/gguf_metadata.h"
#include "tokenizer/jinja/error.h"
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/parser.h"

namespace pagoda {

namespace {

// ChatML as llama.cpp and transformers write it.
constexpr std::string_view kChatMl =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n";

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::shared_ptr<const jinja::Program> program)
    : source_(std::move(source)), program_(std::move(program)) {}

Result<ChatTemplate> ChatTemplate::Parse(std::string source) {
  try {
    std::shared_ptr<const jinja::Program> program = jinja::ParseTemplate(source);
    return ChatTemplate(std::move(source), std::move(program));
  } catch (const jinja::JinjaError& e) {
    return Status(e.code(), std::string("chat template: ") + e.what());
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("chat template: out of memory while parsing");
  }
}

Result<std::string> ChatTemplate::Render(const nlohmann::ordered_json& context,
                                         const ChatTemplateOptions& options) const {
  if (!context.is_object()) return InvalidArgument("chat template: the context must be a JSON object");
  jinja::Dict vars;
  for (const auto& [k, v] : context.items()) vars.emplace_back(k, jinja::Value::FromJson(v));
  jinja::RenderOptions ro;
  ro.limits.max_steps = options.max_steps;
  ro.limits.max_output_bytes = options.max_output_bytes;
  ro.limits.max_call_depth = options.max_call_depth;
  ro.now = options.now;
  try {
    return jinja::RenderProgram(*program_, vars, ro);
  } catch (const jinja::JinjaError& e) {
    return Status(e.code(), std::string("chat template: ") + e.what());
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("chat template: out of memory while rendering");
  }
}

Result<std::string> ApplyChatTemplate(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                                      const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                      const ChatTemplateSpecials& specials, const nlohmann::ordered_json& extra_kwargs,
                                      const ChatTemplateOptions& options) {
  if (!messages.is_array()) return InvalidArgument("chat template: messages must be a JSON array");
  if (!extra_kwargs.is_null() && !extra_kwargs.is_object()) {
    return InvalidArgument("chat template: extra kwargs must be a JSON object");
  }
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["tools"] = tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = specials.bos_token;
  context["eos_token"] = specials.eos_token;
  if (extra_kwargs.is_object()) {
    for (const auto& [k, v] : extra_kwargs.items()) context[k] = v;
  }
  return tmpl.Render(context, options);
}

std::string_view DefaultChatTemplate() { return kChatMl; }

std::string ChatTemplateSource(const GgufMetadata& metadata, std::string_view name) {
  const std::string key = name.empty() ? "tokenizer.chat_template" : "tokenizer.chat_template." + std::string(name);
  auto s = metadata.GetString(key);
  return s.ok() ? *s : std::string(DefaultChatTemplate());
}

}  // namespace pagoda
