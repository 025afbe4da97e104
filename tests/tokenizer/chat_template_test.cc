#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include "gguf/gguf_metadata.h"

namespace pagoda {
namespace {

using Json = nlohmann::ordered_json;

const Json kMessages = Json::parse(R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Hi"},
  {"role": "assistant", "content": "Hello."},
  {"role": "user", "content": "Bye"}
])");

TEST(ChatTemplateTest, ParseReportsSyntaxErrorsWithLine) {
  auto t = ChatTemplate::Parse("ok\n{% if x %}\n{{ y }");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line"), std::string::npos) << t.status().ToString();
}

TEST(ChatTemplateTest, DefaultTemplateIsChatMl) {
  auto t = ChatTemplate::Parse(std::string(DefaultChatTemplate()));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto r = ApplyChatTemplate(*t, kMessages, nullptr, true, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  auto no_gen = ApplyChatTemplate(*t, kMessages, nullptr, false, {});
  ASSERT_TRUE(no_gen.ok());
  EXPECT_EQ(no_gen->substr(no_gen->size() - 14), "Bye<|im_end|>\n");
}

TEST(ChatTemplateTest, ApplyPassesTransformersVariables) {
  auto t = ChatTemplate::Parse(
      "{{ bos_token }}|{{ eos_token }}|{{ messages | length }}|{{ tools is none }}|{{ documents is none }}|"
      "{{ add_generation_prompt }}|{{ enable_thinking }}|{{ tools[0].name if tools else '' }}");
  ASSERT_TRUE(t.ok());
  auto r = ApplyChatTemplate(*t, kMessages, nullptr, true, {"<s>", "</s>"}, {{"enable_thinking", false}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "<s>|</s>|4|True|True|True|False|");
  auto with_tools = ApplyChatTemplate(*t, kMessages, Json::parse(R"([{"name": "f"}])"), false, {});
  ASSERT_TRUE(with_tools.ok());
  EXPECT_EQ(*with_tools, "||4|False|True|False||f");
}

TEST(ChatTemplateTest, ExtraKwargsOverrideDefaults) {
  auto t = ChatTemplate::Parse("{{ bos_token }}{{ documents | length }}");
  ASSERT_TRUE(t.ok());
  auto r = ApplyChatTemplate(*t, kMessages, nullptr, true, {"<s>", ""}, {{"bos_token", "B"}, {"documents", {1, 2}}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "B2");
}

TEST(ChatTemplateTest, RejectsBadArguments) {
  auto t = ChatTemplate::Parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(ApplyChatTemplate(*t, Json::object(), nullptr, true, {}).ok());
  EXPECT_FALSE(ApplyChatTemplate(*t, kMessages, nullptr, true, {}, Json::array()).ok());
  EXPECT_FALSE(t->Render(Json::array()).ok());
}

TEST(ChatTemplateTest, RaiseExceptionBecomesInvalidArgument) {
  auto t = ChatTemplate::Parse(
      "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
      "{% endfor %}");
  ASSERT_TRUE(t.ok());
  auto r = ApplyChatTemplate(*t, kMessages, nullptr, true, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("System role not supported"), std::string::npos);
}

TEST(ChatTemplateTest, LimitsAreResourceExhausted) {
  auto t = ChatTemplate::Parse("{% for i in range(100000) %}{{ i }}{% endfor %}");
  ASSERT_TRUE(t.ok());
  ChatTemplateOptions o;
  o.max_steps = 1000;
  auto r = t->Render(Json::object(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(ChatTemplateTest, CopiesShareTheParsedTemplate) {
  auto t = ChatTemplate::Parse("{{ messages[0].content }}");
  ASSERT_TRUE(t.ok());
  const ChatTemplate copy = *t;
  auto r = ApplyChatTemplate(copy, kMessages, nullptr, false, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "Be brief.");
  EXPECT_EQ(copy.source(), t->source());
}

TEST(ChatTemplateTest, SourceFromGgufMetadataOrChatMl) {
  GgufMetadata md;
  EXPECT_EQ(ChatTemplateSource(md), DefaultChatTemplate());
  md.Set("tokenizer.chat_template", std::string("{{ 'x' }}"));
  md.Set("tokenizer.chat_template.tool_use", std::string("{{ 'y' }}"));
  EXPECT_EQ(ChatTemplateSource(md), "{{ 'x' }}");
  EXPECT_EQ(ChatTemplateSource(md, "tool_use"), "{{ 'y' }}");
  EXPECT_EQ(ChatTemplateSource(md, "rag"), DefaultChatTemplate());
}

}  // namespace
}  // namespace pagoda
