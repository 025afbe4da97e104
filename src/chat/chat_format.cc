#include "chat/chat_format.h"

#include <algorithm>
#include <regex>

namespace pagoda::chat {

namespace {

bool Contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

bool InVocab(const std::vector<std::string>& vocab, std::string_view text) {
  return std::find(vocab.begin(), vocab.end(), text) != vocab.end();
}

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

const char* ToolDialectName(ToolDialect d) {
  switch (d) {
    case ToolDialect::kGeneric: return "generic";
    case ToolDialect::kHermes: return "hermes";
    case ToolDialect::kLlama3: return "llama3";
    case ToolDialect::kMistral: return "mistral";
    case ToolDialect::kDeepSeekV3: return "deepseek_v3";
  }
  return "generic";
}

ChatFormat DetectChatFormat(std::string_view src, const std::vector<std::string>& vocab) {
  ChatFormat f;
  const bool renders_calls = Contains(src, "tool_calls");
  if (Contains(src, "tool\xe2\x96\x81" "calls\xe2\x96\x81" "begin")) {  // <｜tool▁calls▁begin｜>
    f.dialect = ToolDialect::kDeepSeekV3;
  } else if (Contains(src, "[TOOL_CALLS]")) {
    f.dialect = ToolDialect::kMistral;
  } else if (Contains(src, "<tool_call>")) {
    f.dialect = ToolDialect::kHermes;
  } else if (Contains(src, "<|start_header_id|>") && renders_calls &&
             (Contains(src, "<|python_tag|>") || Contains(src, "\"parameters\""))) {
    f.dialect = ToolDialect::kLlama3;
  }
  if (f.dialect == ToolDialect::kGeneric && !renders_calls) {
    // No tool syntax at all: the server describes tools and folds calls into
    // the assistant's content (see tool_prompt.h).
    f.template_renders_tools = false;
  } else {
    // `tools` as a template variable (not "tool_calls" or "is_tool").
    static const std::regex kToolsVar(R"((^|[^A-Za-z0-9_.])tools([^A-Za-z0-9_]|$))");
    f.template_renders_tools = std::regex_search(std::string(src), kToolsVar);
  }
  f.arguments_as_object =
      renders_calls && f.dialect != ToolDialect::kDeepSeekV3 && !Contains(src, "arguments is string");
  f.keeps_null_content = Contains(src, "['content'] is none") || Contains(src, "message.content is none") ||
                         Contains(src, "['content'] is not none") || Contains(src, "message.content is not none");
  const bool think_in_template = Contains(src, "</think>");
  const bool think_in_vocab = InVocab(vocab, "<think>") && InVocab(vocab, "</think>");
  if (think_in_template || think_in_vocab) {
    f.think_open = "<think>";
    f.think_close = "</think>";
  }
  return f;
}

bool PromptOpensReasoning(const ChatFormat& format, std::string_view prompt) {
  if (!format.has_reasoning()) return false;
  const size_t open = prompt.rfind(format.think_open);
  if (open == std::string_view::npos) return false;
  for (size_t i = open + format.think_open.size(); i < prompt.size(); ++i) {
    if (!IsSpace(prompt[i])) return false;
  }
  return true;
}

std::vector<std::string> ControlMarkers(const ChatFormat& format) {
  std::vector<std::string> m;
  switch (format.dialect) {
    case ToolDialect::kMistral: m.push_back("[TOOL_CALLS]"); break;
    case ToolDialect::kLlama3: m.push_back("<|python_tag|>"); break;
    default: break;
  }
  if (format.has_reasoning()) {
    m.push_back(format.think_open);
    m.push_back(format.think_close);
  }
  return m;
}

}  // namespace pagoda::chat
