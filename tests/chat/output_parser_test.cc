#include "chat/output_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::chat {
namespace {

// The message rebuilt from deltas alone, as a streaming client would.
ParsedMessage FromDeltas(const std::vector<api::ChatDelta>& deltas) {
  ParsedMessage m;
  for (const auto& d : deltas) {
    m.content += d.content;
    m.reasoning += d.reasoning;
    for (const auto& t : d.tool_calls) {
      if (t.id) {
        EXPECT_EQ(t.index, static_cast<int>(m.tool_calls.size()));
        EXPECT_TRUE(t.name.has_value()) << "a call's first delta names it";
        m.tool_calls.push_back({*t.id, t.name.value_or(""), ""});
      }
      EXPECT_LT(t.index, static_cast<int>(m.tool_calls.size()));
      if (t.index < static_cast<int>(m.tool_calls.size())) m.tool_calls[t.index].arguments += t.arguments;
    }
  }
  return m;
}

void ExpectSame(const ParsedMessage& a, const ParsedMessage& b, const std::string& where) {
  EXPECT_EQ(a.content, b.content) << where;
  EXPECT_EQ(a.reasoning, b.reasoning) << where;
  ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size()) << where;
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    EXPECT_EQ(a.tool_calls[i].id, b.tool_calls[i].id) << where;
    EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name) << where;
    EXPECT_EQ(a.tool_calls[i].arguments, b.tool_calls[i].arguments) << where;
  }
}

ParsedMessage Parse(const ParserOptions& o, const std::vector<std::string_view>& pieces) {
  OutputParser p(o);
  std::vector<api::ChatDelta> deltas;
  for (auto piece : pieces) deltas.push_back(p.Push(piece));
  deltas.push_back(p.Finish());
  ExpectSame(FromDeltas(deltas), p.message(), "deltas vs message");
  return p.message();
}

// Parses `text` whole, split at every byte position, and byte by byte; all
// must agree. Returns the whole-text result.
ParsedMessage ParseEverySplit(const ParserOptions& o, std::string_view text) {
  const ParsedMessage whole = Parse(o, {text});
  for (size_t k = 0; k <= text.size(); ++k) {
    ExpectSame(Parse(o, {text.substr(0, k), text.substr(k)}), whole, "split at " + std::to_string(k));
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  ExpectSame(Parse(o, bytes), whole, "byte by byte");
  return whole;
}

ParserOptions Opts(ToolDialect dialect, bool tools, bool think = false) {
  ParserOptions o;
  o.format.dialect = dialect;
  if (think) {
    o.format.think_open = "<think>";
    o.format.think_close = "</think>";
  }
  o.tools = tools;
  return o;
}

TEST(OutputParserTest, PlainContentPassesThrough) {
  const auto m = ParseEverySplit(Opts(ToolDialect::kHermes, false), "Hello <tool_call> world {\"a\":1}");
  EXPECT_EQ(m.content, "Hello <tool_call> world {\"a\":1}");
  EXPECT_TRUE(m.tool_calls.empty());
}

TEST(OutputParserTest, HermesToolCalls) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par\\\"is\", \"n\": [1, "
      "{\"x\": \"}\"}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": "
      "\"caf\xc3\xa9\"}}\n</tool_call>";
  const auto m = ParseEverySplit(Opts(ToolDialect::kHermes, true), text);
  EXPECT_EQ(m.content, "Let me check.");  // the whitespace before a call goes with it
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].id, "call_0");
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Par\\\"is\", \"n\": [1, {\"x\": \"}\"}]}");
  EXPECT_EQ(nlohmann::json::parse(m.tool_calls[0].arguments)["city"], "Par\"is");
  EXPECT_EQ(m.tool_calls[1].name, "search");
  EXPECT_EQ(m.tool_calls[1].arguments, "{\"query\": \"caf\xc3\xa9\"}");
}

TEST(OutputParserTest, Qwen3ReasoningThenToolCall) {
  const std::string text =
      "<think>\nThe user wants weather. </thin is not a marker\n</think>\n\n<tool_call>\n{\"name\": \"f\", "
      "\"arguments\": {}}\n</tool_call>";
  const auto m = ParseEverySplit(Opts(ToolDialect::kHermes, true, true), text);
  EXPECT_EQ(m.reasoning, "\nThe user wants weather. </thin is not a marker\n");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].name, "f");
  EXPECT_EQ(m.tool_calls[0].arguments, "{}");
}

TEST(OutputParserTest, ReasoningOpenedByPrompt) {
  auto o = Opts(ToolDialect::kGeneric, false, true);
  o.reasoning_open = true;
  const auto m = ParseEverySplit(o, "step 1, step 2</think>\n\nThe answer is 4.");
  EXPECT_EQ(m.reasoning, "step 1, step 2");
  EXPECT_EQ(m.content, "The answer is 4.");
  EXPECT_TRUE(m.has_reasoning);
}

TEST(OutputParserTest, UnterminatedReasoningStaysReasoning) {
  const auto m = ParseEverySplit(Opts(ToolDialect::kGeneric, false, true), "  <think>thinking</th");
  EXPECT_EQ(m.reasoning, "thinking</th");
  EXPECT_EQ(m.content, "");
}

TEST(OutputParserTest, ThinkOnlyAtTheStart) {
  const auto m = ParseEverySplit(Opts(ToolDialect::kGeneric, false, true), "<thin> no <think>x</think>");
  EXPECT_EQ(m.content, "<thin> no <think>x</think>");
  EXPECT_EQ(m.reasoning, "");
}

TEST(OutputParserTest, Llama3JsonCallsWithAndWithoutPythonTag) {
  auto m = ParseEverySplit(Opts(ToolDialect::kLlama3, true),
                           "  {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"parameters\": "
                           "{\"q\": 1}, \"name\": \"search\"}");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(m.tool_calls[1].name, "search");  // arguments before the name are held for it
  EXPECT_EQ(m.tool_calls[1].arguments, "{\"q\": 1}");

  m = ParseEverySplit(Opts(ToolDialect::kLlama3, true),
                      "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": true}}");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"a\": true}");
  EXPECT_EQ(m.content, "");
}

TEST(OutputParserTest, JsonDialectTextIsContent) {
  const auto m = ParseEverySplit(Opts(ToolDialect::kLlama3, true), "The weather is {fine}.");
  EXPECT_EQ(m.content, "The weather is {fine}.");
  EXPECT_TRUE(m.tool_calls.empty());
}

TEST(OutputParserTest, BrokenUnnamedCallBecomesContent) {
  const auto m = ParseEverySplit(Opts(ToolDialect::kGeneric, true), "{\"answer\": 42, oops");
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, "{\"answer\": 42, oops");
}

TEST(OutputParserTest, GenericScalarArgumentsAndTruncation) {
  auto m = ParseEverySplit(Opts(ToolDialect::kGeneric, true), "{\"name\":\"f\",\"arguments\":null}");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "null");
  // Cut off by max_tokens: the call keeps what it has.
  m = ParseEverySplit(Opts(ToolDialect::kGeneric, true), "{\"name\":\"f\",\"arguments\":{\"a\": [1, 2");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"a\": [1, 2");
}

TEST(OutputParserTest, MistralArray) {
  const auto m = ParseEverySplit(
      Opts(ToolDialect::kMistral, true),
      "[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {}}]");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "a");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"x\": 1}");
  EXPECT_EQ(m.tool_calls[1].name, "b");
  EXPECT_EQ(m.tool_calls[1].id, "call_1");
}

TEST(OutputParserTest, DeepSeekV3Calls) {
  const std::string b = "<\xef\xbd\x9c";  // <｜
  const std::string e = "\xef\xbd\x9c>";   // ｜>
  const std::string u = "\xe2\x96\x81";    // ▁
  const std::string text = "Checking." + b + "tool" + u + "calls" + u + "begin" + e + b + "tool" + u + "call" + u +
                           "begin" + e + "function" + b + "tool" + u + "sep" + e + "get_weather\n```json\n{\"city\": "
                           "\"Paris\"}\n```" + b + "tool" + u + "call" + u + "end" + e + "\n" + b + "tool" + u + "call" +
                           u + "begin" + e + "function" + b + "tool" + u + "sep" + e + "search\n```json\n{\"q\": "
                           "\"`x`\"}\n```" + b + "tool" + u + "call" + u + "end" + e + b + "tool" + u + "calls" + u +
                           "end" + e;
  const auto m = ParseEverySplit(Opts(ToolDialect::kDeepSeekV3, true), text);
  EXPECT_EQ(m.content, "Checking.");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(m.tool_calls[1].name, "search");
  EXPECT_EQ(m.tool_calls[1].arguments, "{\"q\": \"`x`\"}");
}

TEST(OutputParserTest, KimiK2CallsKeepTheirIds) {
  const std::string text =
      "Checking both.<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.get_weather:0"
      "<|tool_call_argument_begin|> {\"city\": \"Paris\"} <|tool_call_end|>\n<|tool_call_begin|>"
      "functions.search:1<|tool_call_argument_begin|>{\"q\": \"<|x|>\"}<|tool_call_end|><|tool_calls_section_end|>";
  const auto m = ParseEverySplit(Opts(ToolDialect::kKimiK2, true), text);
  EXPECT_EQ(m.content, "Checking both.");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  // The model's id is the call's id: the template writes it back in the
  // history and in "## Return of <id>".
  EXPECT_EQ(m.tool_calls[0].id, "functions.get_weather:0");
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\"}");  // the space around it is not kept
  EXPECT_EQ(m.tool_calls[1].id, "functions.search:1");
  EXPECT_EQ(m.tool_calls[1].name, "search");
  EXPECT_EQ(m.tool_calls[1].arguments, "{\"q\": \"<|x|>\"}");
}

TEST(OutputParserTest, KimiK2SingularSectionAndTextAfter) {
  const std::string text =
      "<|tool_call_section_begin|><|tool_call_begin|>ping:0<|tool_call_argument_begin|>{}<|tool_call_end|>"
      "<|tool_call_section_end|>\nDone.";
  const auto m = ParseEverySplit(Opts(ToolDialect::kKimiK2, true), text);
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].id, "ping:0");
  EXPECT_EQ(m.tool_calls[0].name, "ping");
  EXPECT_EQ(m.tool_calls[0].arguments, "{}");
  EXPECT_EQ(m.content, "Done.");
  // Without tools the markers are content.
  EXPECT_EQ(ParseEverySplit(Opts(ToolDialect::kKimiK2, false), text).content, text);
}

TEST(OutputParserTest, Glm45CallsWithReasoning) {
  ParserOptions o = Opts(ToolDialect::kGlm45, true, true);
  api::ToolFunction weather;
  weather.name = "get_weather";
  weather.parameters = nlohmann::json::parse(
      R"({"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"},
          "days": {"type": "integer"}, "opts": {"type": "object"}}})");
  o.functions = {weather};
  const std::string text =
      "<think>Paris, 3 days.</think>\nLet me look.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
      "<arg_value>Paris \"Centre\"</arg_value>\n<arg_key>zip</arg_key>\n<arg_value>75001</arg_value>\n"
      "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n<arg_key>opts</arg_key>\n<arg_value>{\"metric\": true}"
      "</arg_value>\n</tool_call>\n<tool_call>ping\n</tool_call>";
  const auto m = ParseEverySplit(o, text);
  EXPECT_EQ(m.reasoning, "Paris, 3 days.");
  EXPECT_EQ(m.content, "Let me look.");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  // Declared strings stay strings ("75001" too); other values are JSON.
  EXPECT_EQ(m.tool_calls[0].arguments,
            "{\"city\": \"Paris \\\"Centre\\\"\", \"zip\": \"75001\", \"days\": 3, \"opts\": {\"metric\": true}}");
  EXPECT_EQ(m.tool_calls[1].name, "ping");
  EXPECT_EQ(m.tool_calls[1].arguments, "{}");
  EXPECT_EQ(m.tool_calls[0].id, "call_0");
}

TEST(OutputParserTest, Glm45WithoutSchemasAndTruncated) {
  // No schema: what parses as JSON is JSON, the rest a string.
  auto m = ParseEverySplit(Opts(ToolDialect::kGlm45, true),
                           "<tool_call>f\n<arg_key>n</arg_key>\n<arg_value>12</arg_value>\n<arg_key>s</arg_key>\n"
                           "<arg_value>a < b</arg_value>\n</tool_call>");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"n\": 12, \"s\": \"a < b\"}");
  // Cut off mid-value: the pairs read so far, closed.
  m = Parse(Opts(ToolDialect::kGlm45, true),
            {"<tool_call>f\n<arg_key>a</arg_key><arg_value>1</arg_value><arg_key>b</arg_key><arg_value>2"});
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"a\": 1}");
  // A <tool_call> with no name line is not a call.
  m = ParseEverySplit(Opts(ToolDialect::kGlm45, true), "x <tool_call>\n</tool_call> y");
  EXPECT_TRUE(m.tool_calls.empty());
}

// Kanana-2: Hermes calls after DeepSeek-R1-style reasoning that the prompt
// may already have opened.
TEST(OutputParserTest, KananaStyleReasoningThenHermesCall) {
  ParserOptions o = Opts(ToolDialect::kHermes, true, true);
  o.reasoning_open = true;
  const auto m = ParseEverySplit(
      o, "Need the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
         "\"\uc11c\uc6b8\"}}\n</tool_call>");
  EXPECT_EQ(m.reasoning, "Need the weather.\n");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"\uc11c\uc6b8\"}");
}

TEST(OutputParserTest, HoldsBackOnlyAPartialMarker) {
  OutputParser p(Opts(ToolDialect::kHermes, true));
  EXPECT_EQ(p.Push("abc <tool").content, "abc");  // and the space, until it is known not to precede a call
  EXPECT_EQ(p.Push("box>").content, " <toolbox>");
  EXPECT_EQ(p.Finish().content, "");
}

TEST(OutputParserTest, StreamsArgumentsAsTheyArrive) {
  OutputParser p(Opts(ToolDialect::kHermes, true));
  auto d = p.Push("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": ");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(*d.tool_calls[0].name, "f");
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"a\": ");
  d = p.Push("12");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_FALSE(d.tool_calls[0].id.has_value());
  EXPECT_EQ(d.tool_calls[0].arguments, "12");
}

TEST(OutputParserTest, CustomIds) {
  auto o = Opts(ToolDialect::kHermes, true);
  o.make_id = [](int i) { return "call_abc" + std::to_string(i); };
  const auto m = Parse(o, {"<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>"});
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.tool_calls[0].id, "call_abc0");
}

}  // namespace
}  // namespace pagoda::chat

namespace pagoda::chat {
namespace {

TEST(OutputParserTest, MistralBareArrayAtTheStart) {
  auto m = ParseEverySplit(Opts(ToolDialect::kMistral, true), " [{\"name\": \"a\", \"arguments\": {}}]");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.content, "");
  m = ParseEverySplit(Opts(ToolDialect::kMistral, true), "[1] is a citation");
  EXPECT_TRUE(m.tool_calls.empty());
  EXPECT_EQ(m.content, "[1] is a citation");
}

}  // namespace
}  // namespace pagoda::chat

namespace pagoda::chat {
namespace {

TEST(OutputParserTest, WhitespaceBeforeACallIsDropped) {
  auto m = ParseEverySplit(Opts(ToolDialect::kHermes, true),
                           "\t \n<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  m = ParseEverySplit(Opts(ToolDialect::kHermes, true), "Done. \n");
  EXPECT_EQ(m.content, "Done. \n");  // kept when no call follows
}

}  // namespace
}  // namespace pagoda::chat
