// ChatFormat: how a model writes tool calls and reasoning, detected once from
// its chat template text (and the tokenizer's vocabulary). The output parser
// and the tool grammar read it; request rendering uses it to pass tool-call
// arguments the way the template expects. Immutable value; any thread.
//
// Dialects (what the model emits for a call):
//   kHermes     <tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>   (Qwen2.5, Qwen3, Hermes)
//   kLlama3     {"name": N, "parameters": {...}}, optionally after <|python_tag|>
//   kMistral    [TOOL_CALLS][{"name": N, "arguments": {...}}, ...]
//   kDeepSeekV3 <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\n{...}\n```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
//   kKimiK2     <|tool_calls_section_begin|><|tool_call_begin|>functions.N:I<|tool_call_argument_begin|>{...}<|tool_call_end|>...<|tool_calls_section_end|>
//               (the id "functions.N:I" is the call's id: the template renders it back)
//   kGlm45      <tool_call>N\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n...</tool_call>
//               (V is a string as written, any other type as JSON; see glm_arguments.h)
//   kGeneric    {"name": N, "arguments": {...}}  (templates without tool syntax;
//               the tools are described in a system message instead)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::chat {

enum class ToolDialect { kGeneric, kHermes, kLlama3, kMistral, kDeepSeekV3, kKimiK2, kGlm45 };

const char* ToolDialectName(ToolDialect d);  // "generic", "hermes", ...

struct ChatFormat {
  ToolDialect dialect = ToolDialect::kGeneric;
  // The template renders `tools` itself; when false the server describes the
  // tools in a system message.
  bool template_renders_tools = false;
  // The template prints tool_call arguments with `| tojson` only, so it needs
  // them as an object, not the JSON string the API carries.
  bool arguments_as_object = false;
  // The template tests an assistant message's content for none (DeepSeek V3
  // renders tool calls only then), so a null content stays null.
  bool keeps_null_content = false;
  // Reasoning markers; empty when the model has none.
  std::string think_open;
  std::string think_close;

  bool has_reasoning() const { return !think_close.empty(); }
};

// `template_source`: the chat template text; `vocab_texts`: token strings the
// vocabulary holds (markers such as "<tool_call>" or "[TOOL_CALLS]" that are
// single tokens); may be empty.
ChatFormat DetectChatFormat(std::string_view template_source, const std::vector<std::string>& vocab_texts = {});

// True when a rendered generation prompt ends inside an open reasoning block
// (DeepSeek-R1 and some Qwen3 templates write "<think>\n" themselves), so the
// output starts as reasoning.
bool PromptOpensReasoning(const ChatFormat& format, std::string_view prompt_text);

// Marker strings of the format that a vocabulary may hold as control tokens
// (which decode to nothing by default): the server feeds their text to the
// output parser.
std::vector<std::string> ControlMarkers(const ChatFormat& format);

}  // namespace pagoda::chat
