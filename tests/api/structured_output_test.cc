// Request fields of structured outputs and tool calling, and their response
// shapes (OpenAI's: message.tool_calls, delta.tool_calls, reasoning_content).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/chat_request.h"
#include "api/chat_response.h"
#include "api/completion_request.h"

namespace pagoda::api {
namespace {

using nlohmann::json;

std::string Body(const std::string& extra) {
  return R"({"messages":[{"role":"user","content":"hi"}],)" + extra + "}";
}

ApiError ErrorOf(const std::string& body) {
  auto r = ParseChatCompletionRequest(body);
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? ApiError{} : r.error();
}

TEST(StructuredOutputTest, ParsesResponseFormats) {
  auto r = ParseChatCompletionRequest(Body(R"("response_format":{"type":"json_object"})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->options.structured.response_format.type, ResponseFormatType::kJsonObject);
  EXPECT_EQ(r->options.structured.param(), "response_format");

  r = ParseChatCompletionRequest(Body(R"("response_format":{"type":"json_schema","json_schema":{"name":"person",
      "description":"d","strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"}}}}})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ResponseFormat& f = r->options.structured.response_format;
  EXPECT_EQ(f.type, ResponseFormatType::kJsonSchema);
  EXPECT_EQ(f.name, "person");
  EXPECT_EQ(*f.description, "d");
  EXPECT_TRUE(f.strict);
  EXPECT_EQ(f.schema["properties"]["a"]["type"], "integer");

  r = ParseChatCompletionRequest(Body(R"("response_format":{"type":"text"})"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->options.structured.constrained());
}

// The generated object follows the schema's properties order, so the parsed
// schema must keep it (a plain nlohmann::json would sort "zeta" after "alpha").
TEST(StructuredOutputTest, SchemasKeepPropertyOrder) {
  const std::string schema = R"({"type":"object","properties":{"zeta":{"type":"string"},"mid":{"type":"integer"},"alpha":{"type":"boolean"}}})";
  auto chat = ParseChatCompletionRequest(
      R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":)" +
      schema + R"(}},"tools":[{"type":"function","function":{"name":"f","parameters":)" + schema + "}}]}");
  ASSERT_TRUE(chat.ok()) << chat.error().message;
  auto keys = [](const nlohmann::ordered_json& j) {
    std::vector<std::string> k;
    for (const auto& [key, v] : j.at("properties").items()) k.push_back(key);
    return k;
  };
  const std::vector<std::string> want = {"zeta", "mid", "alpha"};
  EXPECT_EQ(keys(chat->options.structured.response_format.schema), want);
  ASSERT_EQ(chat->tools.size(), 1u);
  ASSERT_TRUE(chat->tools[0].parameters.has_value());
  EXPECT_EQ(keys(*chat->tools[0].parameters), want);
  auto completion = ParseCompletionRequest(
      R"({"prompt":"x","response_format":{"type":"json_schema","json_schema":{"name":"s","schema":)" + schema + "}}}");
  ASSERT_TRUE(completion.ok()) << completion.error().message;
  EXPECT_EQ(keys(completion->options.structured.response_format.schema), want);
}

TEST(StructuredOutputTest, GrammarAndRegexExtensions) {
  auto r = ParseChatCompletionRequest(Body(R"("grammar":"root ::= \"a\"")"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->options.structured.grammar, "root ::= \"a\"");
  auto c = ParseCompletionRequest(R"({"prompt":"x","regex":"[a-z]+"})");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(*c->options.structured.regex, "[a-z]+");
  c = ParseCompletionRequest(R"({"prompt":"x","response_format":{"type":"json_object"}})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options.structured.response_format.type, ResponseFormatType::kJsonObject);
}

TEST(StructuredOutputTest, BadShapesAreNamed) {
  struct Case {
    std::string extra;
    std::string param;
  } cases[] = {
      {R"("response_format":"json")", "response_format"},
      {R"("response_format":{})", "response_format.type"},
      {R"("response_format":{"type":"xml"})", "response_format.type"},
      {R"("response_format":{"type":"json_schema"})", "response_format.json_schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{}}})", "response_format.json_schema.name"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"a b"}})", "response_format.json_schema.name"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"a","schema":[1]}})",
       "response_format.json_schema.schema"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"a","strict":"yes"}})",
       "response_format.json_schema.strict"},
      {R"("grammar":"")", "grammar"},
      {R"("regex":5)", "regex"},
      {R"("grammar":"root ::= \"a\"","regex":"a")", "grammar"},
      {R"("regex":"a","response_format":{"type":"json_object"})", "regex"},
      {R"("tools":{})", "tools"},
      {R"("tools":[{"type":"retrieval"}])", "tools[0].type"},
      {R"("tools":[{"type":"function"}])", "tools[0].function"},
      {R"("tools":[{"type":"function","function":{"name":"bad name"}}])", "tools[0].function.name"},
      {R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])", "tools[0].function.parameters"},
      {R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}])",
       "tools[1].function.name"},
      {R"("tool_choice":"required")", "tool_choice"},
      {R"("tool_choice":"sometimes")", "tool_choice"},
      {R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}})",
       "tool_choice"},
      {R"("tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","response_format":{"type":"json_object"})",
       "response_format"},
      {R"("parallel_tool_calls":1)", "parallel_tool_calls"},
  };
  for (const auto& c : cases) {
    const ApiError e = ErrorOf(Body(c.extra));
    EXPECT_EQ(e.status, 400) << c.extra;
    ASSERT_TRUE(e.param) << c.extra;
    EXPECT_EQ(*e.param, c.param) << c.extra << ": " << e.message;
  }
}

TEST(StructuredOutputTest, ParsesToolsAndChoice) {
  auto r = ParseChatCompletionRequest(Body(
      R"("tools":[{"type":"function","function":{"name":"get_weather","description":"w","strict":true,
          "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
          {"type":"function","function":{"name":"ping"}}],
         "tool_choice":{"type":"function","function":{"name":"ping"}},"parallel_tool_calls":false)"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->tools.size(), 2u);
  EXPECT_EQ(r->tools[0].name, "get_weather");
  EXPECT_EQ(*r->tools[0].description, "w");
  EXPECT_TRUE(r->tools[0].strict);
  EXPECT_EQ((*r->tools[0].parameters)["properties"]["city"]["type"], "string");
  EXPECT_FALSE(r->tools[1].parameters.has_value());
  EXPECT_EQ(r->tool_choice.mode, ToolChoiceMode::kFunction);
  EXPECT_EQ(r->tool_choice.function, "ping");
  EXPECT_FALSE(r->parallel_tool_calls);
}

TEST(StructuredOutputTest, ParsesToolConversation) {
  auto r = ParseChatCompletionRequest(R"({"messages":[{"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"21C"},
      {"role":"assistant","content":"It is 21C.","reasoning_content":"easy"}]})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& m = r->messages;
  EXPECT_TRUE(m[1].content_null);
  ASSERT_EQ(m[1].tool_calls.size(), 1u);
  EXPECT_EQ(m[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(m[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(m[1].tool_calls[0].arguments, "{\"city\":\"Paris\"}");
  EXPECT_EQ(*m[2].tool_call_id, "call_1");
  EXPECT_EQ(*m[3].reasoning_content, "easy");

  const ApiError e = ErrorOf(R"({"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]}]})");
  EXPECT_EQ(*e.param, "messages[0].tool_calls[0].function");
}

TEST(StructuredOutputTest, ResponseCarriesToolCallsAndReasoning) {
  ChatCompletion c;
  ChatChoice ch;
  ch.reasoning_content = "think";
  ch.tool_calls.push_back({"call_x", "get_weather", "{\"city\":\"Paris\"}"});
  ch.finish_reason = FinishReason::kToolCalls;
  c.choices.push_back(ch);
  const json j = c.ToJson();
  const json& msg = j["choices"][0]["message"];
  EXPECT_TRUE(msg["content"].is_null());
  EXPECT_EQ(msg["reasoning_content"], "think");
  EXPECT_EQ(msg["tool_calls"][0],
            json::parse(R"({"id":"call_x","type":"function","function":{"name":"get_weather",
                            "arguments":"{\"city\":\"Paris\"}"}})"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
}

TEST(StructuredOutputTest, StreamDeltasInOpenAiShape) {
  ChatStreamFormatter f("id", 1, "m", "fp", false);
  ChatDelta d;
  d.reasoning = "r";
  d.tool_calls.push_back({0, std::string("call_1"), std::string("f"), ""});
  json j = json::parse(f.DeltaChunk(0, d));
  const json& delta = j["choices"][0]["delta"];
  EXPECT_FALSE(delta.contains("content"));
  EXPECT_EQ(delta["reasoning_content"], "r");
  EXPECT_EQ(delta["tool_calls"][0],
            json::parse(R"({"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}})"));
  ChatDelta more;
  more.tool_calls.push_back({0, std::nullopt, std::nullopt, "{\"a\""});
  j = json::parse(f.DeltaChunk(0, more));
  EXPECT_EQ(j["choices"][0]["delta"]["tool_calls"][0], json::parse(R"({"index":0,"function":{"arguments":"{\"a\""}})"));
}

}  // namespace
}  // namespace pagoda::api
