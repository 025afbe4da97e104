// GBNF for constrained chat output (grammar text only; compiling and caching
// is the server's, through grammar::GrammarCache):
//   - ToolCallGbnf: a forced tool call (tool_choice "required" or a named
//     function) in the model's dialect, with each function's arguments under
//     its `parameters` schema (JsonSchemaToGbnf, one root_name per function);
//     one call, or one or more when parallel_tool_calls is true.
//   - WrapReasoning: lets a reasoning model think first: an optional
//     <think>...</think> block (any text not containing the closing marker)
//     before the constrained answer.
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/tools.h"
#include "base/status.h"
#include "chat/chat_format.h"

namespace pagoda::chat {

// Whitespace allowed before an answer (and after a reasoning block): a few
// bytes, not unbounded, so a weak model cannot spend its budget on it.
inline constexpr std::string_view kLeadingSpace = "[ \\t\\n]{0,4}";

// A GBNF string literal ("..." with escapes) for `text`.
std::string GbnfLiteral(std::string_view text);

// Rules for the forced call(s), the whole answer being rule `root_name`
// (leading whitespace allowed). `tools` must contain choice.function when
// choice.mode is kFunction. Errors: InvalidArgument naming the tool
// ("tools[1] (get_weather): ...") when its parameters cannot be enforced.
Result<std::string> ToolCallGbnf(const ChatFormat& format, const std::vector<api::ToolFunction>& tools,
                                 const api::ToolChoice& choice, bool parallel, std::string_view root_name);

// `gbnf` (whose answer rule is `answer_root`) plus rules that make rule
// `root_name` = [optional whitespace and an optional reasoning block] answer.
// With `reasoning_open` the prompt already opened the block, so the output
// starts inside it and must close it.
std::string WrapReasoning(std::string gbnf, std::string_view answer_root, const ChatFormat& format,
                          bool reasoning_open, std::string_view root_name);

}  // namespace pagoda::chat
