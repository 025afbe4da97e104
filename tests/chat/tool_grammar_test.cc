#include "chat/tool_grammar.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/constraint_builder.h"
#include "chat/output_parser.h"
#include "sampling/grammar/grammar.h"
#include "sampling/grammar/matcher.h"

namespace pagoda::chat {
namespace {

using nlohmann::json;

std::vector<api::ToolFunction> Tools() {
  api::ToolFunction weather;
  weather.name = "get_weather";
  weather.parameters = json::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
      "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"], "additionalProperties": false})");
  api::ToolFunction ping;
  ping.name = "ping";  // no parameters: any object
  return {weather, ping};
}

ChatFormat Format(ToolDialect d) {
  ChatFormat f;
  f.dialect = d;
  return f;
}

std::shared_ptr<const grammar::Grammar> Compile(const std::string& gbnf, const std::string& root) {
  auto g = grammar::CompileGbnf(gbnf, root);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf;
  return g.ok() ? *g : nullptr;
}

// The grammar accepts `text`, and the parser reads the calls back from it.
void ExpectCalls(ToolDialect d, const api::ToolChoice& choice, bool parallel, const std::string& text,
                 const std::vector<std::pair<std::string, json>>& calls) {
  auto gbnf = ToolCallGbnf(Format(d), Tools(), choice, parallel, "calls");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  auto g = Compile(*gbnf, "calls");
  ASSERT_TRUE(g);
  EXPECT_TRUE(grammar::Accepts(*g, text)) << ToolDialectName(d) << ": " << text;
  ParserOptions o;
  o.format = Format(d);
  o.tools = true;
  OutputParser p(o);
  p.Push(text);
  p.Finish();
  EXPECT_EQ(p.message().content, "") << text;
  ASSERT_EQ(p.message().tool_calls.size(), calls.size()) << text;
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(p.message().tool_calls[i].name, calls[i].first);
    EXPECT_EQ(json::parse(p.message().tool_calls[i].arguments), calls[i].second);
  }
}

TEST(ToolGrammarTest, EachDialectAcceptsItsCallSyntax) {
  const api::ToolChoice required{api::ToolChoiceMode::kRequired, ""};
  const json args = {{"city", "Paris"}, {"unit", "c"}};
  const std::string a = R"({"city":"Paris","unit":"c"})";
  ExpectCalls(ToolDialect::kHermes, required, false,
              "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + a + "}\n</tool_call>", {{"get_weather", args}});
  ExpectCalls(ToolDialect::kLlama3, required, false, "{\"name\": \"get_weather\", \"parameters\": " + a + "}",
              {{"get_weather", args}});
  ExpectCalls(ToolDialect::kGeneric, required, false, "\n{\"name\": \"ping\", \"arguments\": {}}",
              {{"ping", json::object()}});
  ExpectCalls(ToolDialect::kMistral, required, true,
              "[{\"name\": \"get_weather\", \"arguments\": " + a + "}, {\"name\": \"ping\", \"arguments\": {}}]",
              {{"get_weather", args}, {"ping", json::object()}});
  const std::string b = "<\xef\xbd\x9c", e = "\xef\xbd\x9c>", u = "\xe2\x96\x81";
  ExpectCalls(ToolDialect::kDeepSeekV3, required, false,
              b + "tool" + u + "calls" + u + "begin" + e + b + "tool" + u + "call" + u + "begin" + e + "function" + b +
                  "tool" + u + "sep" + e + "get_weather\n```json\n" + a + "\n```" + b + "tool" + u + "call" + u + "end" +
                  e + b + "tool" + u + "calls" + u + "end" + e,
              {{"get_weather", args}});
  ExpectCalls(ToolDialect::kKimiK2, required, true,
              "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>" + a +
                  "<|tool_call_end|><|tool_call_begin|>functions.ping:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
                  "<|tool_calls_section_end|>",
              {{"get_weather", args}, {"ping", json::object()}});
  ExpectCalls(ToolDialect::kGlm45, required, false,
              "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>unit</arg_key>\n"
              "<arg_value>c</arg_value>\n</tool_call>",
              {{"get_weather", args}});
}

TEST(ToolGrammarTest, Glm45KeysAreTheSchemasProperties) {
  auto gbnf = ToolCallGbnf(Format(ToolDialect::kGlm45), Tools(), {api::ToolChoiceMode::kRequired, ""}, false, "c");
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().message();
  auto g = Compile(*gbnf, "c");
  ASSERT_TRUE(g);
  const auto call = [](const std::string& name, const std::string& key, const std::string& value) {
    return "<tool_call>" + name + "\n<arg_key>" + key + "</arg_key>\n<arg_value>" + value + "</arg_value>\n</tool_call>";
  };
  EXPECT_TRUE(grammar::Accepts(*g, call("get_weather", "city", "a <b> c")));
  EXPECT_FALSE(grammar::Accepts(*g, call("get_weather", "town", "Paris")));
  EXPECT_FALSE(grammar::Accepts(*g, call("get_weather", "city", "a</b")));
  EXPECT_TRUE(grammar::Accepts(*g, call("ping", "anything", "1")));  // no properties: any key
}

TEST(ToolGrammarTest, ArgumentsFollowTheParameterSchema) {
  auto gbnf = ToolCallGbnf(Format(ToolDialect::kHermes), Tools(), {api::ToolChoiceMode::kRequired, ""}, false, "c");
  ASSERT_TRUE(gbnf.ok());
  auto g = Compile(*gbnf, "c");
  ASSERT_TRUE(g);
  auto call = [](const std::string& name, const std::string& args) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
  };
  EXPECT_FALSE(grammar::Accepts(*g, call("get_weather", R"({"city":"Paris","unit":"k"})")));
  EXPECT_FALSE(grammar::Accepts(*g, call("get_weather", R"({"city":"Paris"})")));
  EXPECT_FALSE(grammar::Accepts(*g, call("get_weathe", R"({"city":"Paris","unit":"c"})")));
  // Not parallel: one call only.
  const std::string one = call("ping", "{}");
  EXPECT_TRUE(grammar::Accepts(*g, one));
  EXPECT_FALSE(grammar::Accepts(*g, one + "\n" + one));
}

TEST(ToolGrammarTest, NamedFunctionOnly) {
  auto gbnf = ToolCallGbnf(Format(ToolDialect::kGeneric), Tools(), {api::ToolChoiceMode::kFunction, "ping"}, true, "c");
  ASSERT_TRUE(gbnf.ok());
  auto g = Compile(*gbnf, "c");
  ASSERT_TRUE(g);
  EXPECT_TRUE(grammar::Accepts(*g, R"({"name": "ping", "arguments": {}})"));
  EXPECT_TRUE(grammar::Accepts(*g, "{\"name\": \"ping\", \"arguments\": {}}\n{\"name\": \"ping\", \"arguments\": {}}"));
  EXPECT_FALSE(grammar::Accepts(*g, R"({"name": "get_weather", "arguments": {"city":"P","unit":"c"}})"));
}

TEST(ToolGrammarTest, UnsupportedKeywordNamesTheTool) {
  auto tools = Tools();
  tools[1].parameters = json::parse(R"({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 3}}})");
  auto gbnf = ToolCallGbnf(Format(ToolDialect::kHermes), tools, {api::ToolChoiceMode::kRequired, ""}, false, "c");
  ASSERT_FALSE(gbnf.ok());
  EXPECT_NE(gbnf.status().message().find("tools[1] (ping)"), std::string::npos) << gbnf.status().message();
  EXPECT_NE(gbnf.status().message().find("multipleOf"), std::string::npos) << gbnf.status().message();
}

TEST(ToolGrammarTest, GbnfLiteralEscapes) {
  auto g = Compile("root ::= " + GbnfLiteral("a\"b\\c\n\x01 caf\xc3\xa9") + "\n", "root");
  ASSERT_TRUE(g);
  EXPECT_TRUE(grammar::Accepts(*g, "a\"b\\c\n\x01 caf\xc3\xa9"));
}

TEST(ConstraintBuilderTest, ReasoningBlockIsFreeAndClosedOnce) {
  ConstraintRequest r;
  r.structured.response_format.type = api::ResponseFormatType::kJsonObject;
  ChatFormat f;
  f.think_open = "<think>";
  f.think_close = "</think>";
  r.format = f;
  auto spec = BuildConstraint(r);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_TRUE(spec->has_value());
  EXPECT_EQ((*spec)->delay_until, "");
  auto g = Compile((*spec)->gbnf, (*spec)->root);
  ASSERT_TRUE(g);
  EXPECT_TRUE(grammar::Accepts(*g, "{}"));
  EXPECT_TRUE(grammar::Accepts(*g, "<think>\na < b, </thin </th<</think>\n\n{}"));
  EXPECT_TRUE(grammar::Accepts(*g, "<think></think>{}"));
  EXPECT_FALSE(grammar::Accepts(*g, "<think>x</think>y</think>{}"));
  EXPECT_FALSE(grammar::Accepts(*g, "<think>x</think>not json"));

  // The prompt opened the block: the engine delays the grammar instead.
  r.reasoning_open = true;
  spec = BuildConstraint(r);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ((*spec)->delay_until, "</think>");
  g = Compile((*spec)->gbnf, (*spec)->root);
  ASSERT_TRUE(g);
  EXPECT_TRUE(grammar::Accepts(*g, "\n\n{}"));
}

TEST(ConstraintBuilderTest, UnconstrainedAndParams) {
  ConstraintRequest r;
  auto spec = BuildConstraint(r);
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(spec->has_value());
  r.structured.regex = "[0-9]{3}-x";
  spec = BuildConstraint(r);
  ASSERT_TRUE(spec.ok() && spec->has_value());
  EXPECT_EQ((*spec)->param, "regex");
  auto g = Compile((*spec)->gbnf, (*spec)->root);
  ASSERT_TRUE(g);
  EXPECT_TRUE(grammar::Accepts(*g, "123-x"));
  EXPECT_FALSE(grammar::Accepts(*g, "12-x"));
  r.structured.regex.reset();
  r.structured.grammar = "root ::= \"yes\" | \"no\"";
  spec = BuildConstraint(r);
  ASSERT_TRUE(spec.ok() && spec->has_value());
  EXPECT_EQ((*spec)->param, "grammar");
  EXPECT_EQ((*spec)->root, "root");
  r.tools = Tools();
  r.tool_choice.mode = api::ToolChoiceMode::kRequired;
  r.structured.grammar.reset();
  r.format = ChatFormat{};
  EXPECT_EQ(ConstraintParam(r), "tools");
}

}  // namespace
}  // namespace pagoda::chat
