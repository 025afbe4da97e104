#include "chat/tool_grammar.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "sampling/grammar/json_schema.h"

namespace pagoda::chat {

namespace {

constexpr std::string_view kDsCallsBegin = "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>";
constexpr std::string_view kDsCallsEnd = "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>";
constexpr std::string_view kDsCallBegin = "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>";
constexpr std::string_view kDsCallEnd = "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>";
constexpr std::string_view kDsSep = "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>";
constexpr std::string_view kKimiSectionBegin = "<|tool_calls_section_begin|>";
constexpr std::string_view kKimiSectionEnd = "<|tool_calls_section_end|>";

// A GBNF class body character, escaped.
std::string ClassChar(char c) {
  switch (c) {
    case '\\': return "\\\\";
    case ']': return "\\]";
    case '[': return "\\[";
    case '^': return "\\^";
    case '-': return "\\-";
    default: return std::string(1, c);
  }
}

// The text of one call of function `name` whose arguments are rule `args`.
std::string CallExpr(ToolDialect d, const std::string& name, const std::string& args) {
  const std::string json_name = nlohmann::json(name).dump();
  switch (d) {
    case ToolDialect::kHermes:
      return GbnfLiteral("<tool_call>\n{\"name\": " + json_name + ", \"arguments\": ") + " " + args + " " +
             GbnfLiteral("}\n</tool_call>");
    case ToolDialect::kLlama3:
      return GbnfLiteral("{\"name\": " + json_name + ", \"parameters\": ") + " " + args + " " + GbnfLiteral("}");
    case ToolDialect::kDeepSeekV3:
      return GbnfLiteral(std::string(kDsCallBegin) + "function" + std::string(kDsSep) + name + "\n```json\n") + " " +
             args + " " + GbnfLiteral("\n```" + std::string(kDsCallEnd));
    case ToolDialect::kKimiK2:
      return GbnfLiteral("<|tool_call_begin|>functions." + name + ":") + " [0-9]{1,3} " +
             GbnfLiteral("<|tool_call_argument_begin|>") + " " + args + " " + GbnfLiteral("<|tool_call_end|>");
    case ToolDialect::kGlm45:  // `args` is the rule of the <arg_key>/<arg_value> pairs (GlmArgsRules)
      return GbnfLiteral("<tool_call>" + name + "\n") + " " + args + " " + GbnfLiteral("</tool_call>");
    case ToolDialect::kMistral:
    case ToolDialect::kGeneric:
      break;
  }
  return GbnfLiteral("{\"name\": " + json_name + ", \"arguments\": ") + " " + args + " " + GbnfLiteral("}");
}

// GLM-4.5 arguments as <arg_key>/<arg_value> pairs, rule `root`: the keys
// are the schema's property names (any name when it lists none); a value is
// any text without "</" (its type is not enforced: the parser reads it back
// by the schema, see glm_arguments.h).
std::string GlmArgsRules(const nlohmann::ordered_json& schema, const std::string& root) {
  std::string keys;
  if (schema.is_object() && schema.contains("properties") && schema["properties"].is_object()) {
    for (const auto& [k, v] : schema["properties"].items()) keys += (keys.empty() ? "" : " | ") + GbnfLiteral(k);
  }
  if (keys.empty()) keys = "[^<\\n]+";
  std::string r;
  r += root + "-key ::= " + keys + "\n";
  r += root + "-value ::= ([^<] | \"<\" [^/])*\n";
  r += root + "-pair ::= " + GbnfLiteral("<arg_key>") + " " + root + "-key " + GbnfLiteral("</arg_key>\n<arg_value>") +
       " " + root + "-value " + GbnfLiteral("</arg_value>\n") + "\n";
  r += root + " ::= " + root + "-pair*\n";
  return r;
}

}  // namespace

std::string GbnfLiteral(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", u);
      out += buf;
    } else {
      out.push_back(c);  // UTF-8 passes through: literals are read as code points
    }
  }
  out += "\"";
  return out;
}

Result<std::string> ToolCallGbnf(const ChatFormat& format, const std::vector<api::ToolFunction>& tools,
                                 const api::ToolChoice& choice, bool parallel, std::string_view root_name) {
  const std::string root(root_name);
  std::string rules;
  std::vector<std::string> calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const api::ToolFunction& t = tools[i];
    if (choice.mode == api::ToolChoiceMode::kFunction && t.name != choice.function) continue;
    grammar::JsonSchemaOptions opts;
    opts.root_name = root + "-args" + std::to_string(i);
    opts.strict = t.strict;
    const nlohmann::ordered_json schema = t.parameters ? *t.parameters : nlohmann::ordered_json{{"type", "object"}};
    auto args = format.dialect == ToolDialect::kGlm45 ? Result<std::string>(GlmArgsRules(schema, opts.root_name))
                                                       : grammar::JsonSchemaToGbnf(schema, opts);
    if (!args.ok()) {
      return InvalidArgument("tools[" + std::to_string(i) + "] (" + t.name +
                                     "): parameters: " + args.status().message());
    }
    rules += *args;
    if (!rules.empty() && rules.back() != '\n') rules += '\n';
    const std::string call_rule = root + "-call" + std::to_string(i);
    rules += call_rule + " ::= " + CallExpr(format.dialect, t.name, opts.root_name) + "\n";
    calls.push_back(call_rule);
  }
  if (calls.empty()) return InvalidArgument("tool_choice names no function in tools");
  std::string one = root + "-one ::= ";
  for (size_t i = 0; i < calls.size(); ++i) one += (i ? " | " : "") + calls[i];
  rules += one + "\n";
  // One call, or (parallel) calls joined by the dialect's separator.
  auto calls_expr = [&](std::string_view sep) {
    const std::string one_rule = root + "-one";
    return parallel ? one_rule + " (" + GbnfLiteral(sep) + " " + one_rule + ")*" : one_rule;
  };
  const std::string lead(kLeadingSpace);
  switch (format.dialect) {
    case ToolDialect::kMistral:
      // [TOOL_CALLS] is a control token, which a grammar never allows: the
      // array alone is the call (the parser knows it at the answer's start).
      rules += root + " ::= " + lead + " \"[\" " + calls_expr(", ") + " \"]\"\n";
      break;
    case ToolDialect::kDeepSeekV3:
      rules += root + " ::= " + lead + " " + GbnfLiteral(kDsCallsBegin) + " " + calls_expr("\n") + " " +
               GbnfLiteral(kDsCallsEnd) + "\n";
      break;
    case ToolDialect::kKimiK2:
      rules += root + " ::= " + lead + " " + GbnfLiteral(kKimiSectionBegin) + " " + calls_expr("") + " " +
               GbnfLiteral(kKimiSectionEnd) + "\n";
      break;
    default:
      rules += root + " ::= " + lead + " " + calls_expr("\n") + "\n";
      break;
  }
  return rules;
}

std::string WrapReasoning(std::string gbnf, std::string_view answer_root, const ChatFormat& f, bool reasoning_open,
                          std::string_view root_name) {
  const std::string root(root_name);
  const std::string& m = f.think_close;
  // The reasoning text: any text without `m`, as states of how much of `m`
  // has just been matched (state i: the last i bytes are m[0..i)). Assumes
  // m[0] occurs in m only once, which holds for "</think>".
  const int len = static_cast<int>(m.size());
  auto state = [&](int i) { return root + "-think" + std::to_string(i); };
  const std::string first = ClassChar(m[0]);
  for (int i = 0; i < len; ++i) {
    std::string r = state(i) + " ::= \"\"";
    if (i == 0) {
      r += " | [^" + first + "] " + state(0) + " | " + GbnfLiteral(m.substr(0, 1)) + " " + state(1);
    } else {
      if (i + 1 < len) r += " | " + GbnfLiteral(m.substr(i, 1)) + " " + state(i + 1);
      r += " | " + GbnfLiteral(m.substr(0, 1)) + " " + state(1);
      r += " | [^" + first + ClassChar(m[i]) + "] " + state(0);
    }
    gbnf += r + "\n";
  }
  const std::string ws(kLeadingSpace);
  const std::string block = state(0) + " " + GbnfLiteral(m) + " " + ws;
  if (reasoning_open) {
    gbnf += root + " ::= " + block + " " + std::string(answer_root) + "\n";
  } else {
    gbnf += root + " ::= " + ws + " (" + GbnfLiteral(f.think_open) + " " + block + ")? " + std::string(answer_root) +
            "\n";
  }
  return gbnf;
}

}  // namespace pagoda::chat
