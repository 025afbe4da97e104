#include "chat/constraint_builder.h"

#include "chat/tool_grammar.h"
#include "sampling/grammar/json_schema.h"
#include "sampling/grammar/regex.h"

namespace pagoda::chat {

namespace {

constexpr const char* kAnswerRoot = "pagoda-answer";
constexpr const char* kRoot = "pagoda-root";

}  // namespace

bool ForcesToolCall(const ConstraintRequest& r) {
  return !r.tools.empty() && (r.tool_choice.mode == api::ToolChoiceMode::kRequired ||
                              r.tool_choice.mode == api::ToolChoiceMode::kFunction);
}

std::string ConstraintParam(const ConstraintRequest& r) {
  if (ForcesToolCall(r)) return "tools";
  return std::string(r.structured.param());
}

Result<std::optional<ConstraintSpec>> BuildConstraint(const ConstraintRequest& r) {
  ConstraintSpec spec;
  spec.param = ConstraintParam(r);
  std::string answer_root = "root";
  const api::StructuredOutput& s = r.structured;
  if (ForcesToolCall(r)) {
    auto g = ToolCallGbnf(*r.format, r.tools, r.tool_choice, r.parallel_tool_calls, kAnswerRoot);
    if (!g.ok()) return g.status();
    spec.gbnf = std::move(g).value();
    answer_root = kAnswerRoot;
  } else if (s.grammar) {
    spec.gbnf = *s.grammar;
  } else if (s.regex) {
    auto g = grammar::RegexToGbnf(*s.regex, kAnswerRoot);
    if (!g.ok()) return g.status();
    spec.gbnf = std::move(g).value();
    answer_root = kAnswerRoot;
  } else if (s.response_format.type != api::ResponseFormatType::kText) {
    grammar::JsonSchemaOptions opts;
    opts.root_name = kAnswerRoot;
    opts.strict = s.response_format.strict;
    const nlohmann::ordered_json schema = s.response_format.type == api::ResponseFormatType::kJsonObject
                                      ? nlohmann::ordered_json{{"type", "object"}}
                                      : s.response_format.schema;
    auto g = grammar::JsonSchemaToGbnf(schema, opts);
    if (!g.ok()) return g.status();
    spec.gbnf = std::move(g).value();
    answer_root = kAnswerRoot;
  } else {
    return std::optional<ConstraintSpec>();
  }
  if (!spec.gbnf.empty() && spec.gbnf.back() != '\n') spec.gbnf += '\n';
  const bool reasoning = r.format && r.format->has_reasoning();
  if (reasoning && r.reasoning_open) {
    // The engine leaves the reasoning free up to the marker; the answer may
    // start with the whitespace models put after it.
    spec.delay_until = r.format->think_close;
    spec.gbnf += std::string(kRoot) + " ::= " + std::string(kLeadingSpace) + " " + answer_root + "\n";
    spec.root = kRoot;
  } else if (reasoning) {
    spec.gbnf = WrapReasoning(std::move(spec.gbnf), answer_root, *r.format, false, kRoot);
    spec.root = kRoot;
  } else {
    spec.root = answer_root;
  }
  return std::optional<ConstraintSpec>(std::move(spec));
}

}  // namespace pagoda::chat
