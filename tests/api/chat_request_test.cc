#include "api/chat_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::api {
namespace {

ApiError ErrorOf(std::string_view body, const RequestLimits& limits = {}) {
  auto r = ParseChatCompletionRequest(body, limits);
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? ApiError{} : r.error();
}

TEST(ChatCompletionRequestTest, ParsesAllHonouredFields) {
  auto r = ParseChatCompletionRequest(R"({
    "model": "m", "messages": [{"role": "system", "content": "be brief"},
                               {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                               {"role": "assistant", "content": null},
                               {"role": "developer", "content": "d", "name": "x"},
                               {"role": "tool", "content": "t", "tool_call_id": "c1"}],
    "max_tokens": 5, "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
    "n": 2, "stop": ["x", "y"], "seed": -3, "presence_penalty": 0.1, "frequency_penalty": -0.2,
    "repetition_penalty": 1.1, "logit_bias": {"12": -100, "7": 2.5}, "logprobs": true, "top_logprobs": 3,
    "stream": true, "stream_options": {"include_usage": true}, "user": "u1"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& o = r->options;
  EXPECT_EQ(o.model, "m");
  EXPECT_EQ(*o.max_tokens, 7);  // max_completion_tokens wins, in any order
  EXPECT_EQ(o.max_tokens_param, "max_completion_tokens");
  EXPECT_DOUBLE_EQ(*o.temperature, 0.5);
  EXPECT_EQ(*o.top_k, 40);
  EXPECT_EQ(o.n, 2);
  EXPECT_EQ(o.stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(*o.seed, -3);
  EXPECT_FLOAT_EQ(o.logit_bias.at(12), -100.0f);
  EXPECT_TRUE(o.stream);
  EXPECT_TRUE(o.include_usage);
  EXPECT_EQ(o.user, "u1");
  EXPECT_TRUE(r->logprobs);
  EXPECT_EQ(r->top_logprobs, 3);
  ASSERT_EQ(r->messages.size(), 5u);
  EXPECT_EQ(r->messages[1].content, "a\nb");
  EXPECT_EQ(r->messages[2].role, ChatRole::kAssistant);
  EXPECT_EQ(r->messages[2].content, "");
  EXPECT_EQ(*r->messages[3].name, "x");
  EXPECT_EQ(*r->messages[4].tool_call_id, "c1");
}

TEST(ChatCompletionRequestTest, MaxCompletionTokensWinsWhenFirst) {
  auto r = ParseChatCompletionRequest(
      R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7,"max_tokens":5})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r->options.max_tokens, 7);
}

TEST(ChatCompletionRequestTest, NullMeansAbsent) {
  auto r = ParseChatCompletionRequest(
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":null,"stop":null,"temperature":null,
          "tools":null,"response_format":null,"logprobs":null,"top_logprobs":null})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->options.max_tokens);
  EXPECT_FALSE(r->options.temperature);
}

TEST(ChatCompletionRequestTest, MalformedJsonIs400) {
  for (const char* body : {"{bad json", "", "{\"messages\": [", "[1,2]", "\"str\"", "nul"}) {
    const ApiError e = ErrorOf(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.type, "invalid_request_error");
    EXPECT_EQ(*e.code, "invalid_json") << body;
  }
}

TEST(ChatCompletionRequestTest, DeepNestingIsRejectedBeforeParsing) {
  const std::string body = "{\"messages\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(*ErrorOf(body).code, "invalid_json");
}

TEST(ChatCompletionRequestTest, InvalidUtf8Is400) {
  EXPECT_EQ(*ErrorOf("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}").code, "invalid_utf8");
  EXPECT_EQ(*ErrorOf("{\"messages\":[{\"role\":\"user\",\"content\":\"\xc0\xaf\"}]}").code, "invalid_utf8");
  EXPECT_EQ(*ErrorOf("{\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\"}]}").code, "invalid_utf8");
  // A lone surrogate escape is malformed JSON text.
  EXPECT_EQ(ErrorOf(R"({"messages":[{"role":"user","content":"\ud800"}]})").status, 400);
}

TEST(ChatCompletionRequestTest, WrongTypesNameTheParam) {
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {
      {R"({"messages":"notalist"})", "messages"},
      {R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":"five"})", "max_tokens"},
      {R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5.0})", "max_tokens"},
      {R"({"messages":[{"role":"user","content":"hi"}],"temperature":"hot"})", "temperature"},
      {R"({"messages":[{"role":"user","content":"hi"}],"stream":"yes"})", "stream"},
      {R"({"messages":[{"role":"user","content":"hi"}],"stop":[1]})", "stop[0]"},
      {R"({"messages":[{"role":"user","content":"hi"}],"n":true})", "n"},
      {R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":[1]})", "logit_bias"},
      {R"({"messages":[{"role":"user","content":"hi"}],"model":7})", "model"},
      {R"({"messages":[{"role":"user","content":7}]})", "messages[0].content"},
      {R"({"messages":[{"role":7,"content":"x"}]})", "messages[0].role"},
      {R"({"messages":[5]})", "messages[0]"},
      {R"({"messages":[{"role":"user","content":[{"type":"text","text":3}]}]})", "messages[0].content[0].text"},
  };
  for (const auto& c : cases) {
    const ApiError e = ErrorOf(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    ASSERT_TRUE(e.param) << c.body;
    EXPECT_EQ(*e.param, c.param) << c.body;
    EXPECT_EQ(*e.code, "invalid_type") << c.body;
  }
}

TEST(ChatCompletionRequestTest, MissingAndEmptyMessages) {
  ApiError e = ErrorOf(R"({"model":"m"})");
  EXPECT_EQ(*e.code, "missing_required_parameter");
  EXPECT_EQ(*e.param, "messages");
  e = ErrorOf(R"({"messages":[]})");
  EXPECT_EQ(*e.code, "empty_array");
  e = ErrorOf(R"({"messages":[{"content":"x"}]})");
  EXPECT_EQ(*e.param, "messages[0].role");
  e = ErrorOf(R"({"messages":[{"role":"user"}]})");
  EXPECT_EQ(*e.param, "messages[0].content");
}

TEST(ChatCompletionRequestTest, UnknownRoleIs400) {
  ApiError e = ErrorOf(R"({"messages":[{"role":"wizard","content":"x"}]})");
  EXPECT_EQ(*e.param, "messages[0].role");
  EXPECT_EQ(*e.code, "invalid_value");
  e = ErrorOf(R"({"messages":[{"role":"function","content":"x"}]})");
  EXPECT_EQ(*e.code, "unsupported_value");
}

TEST(ChatCompletionRequestTest, NonTextContentPartsAreUnsupported) {
  const ApiError e = ErrorOf(
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})");
  EXPECT_EQ(*e.param, "messages[0].content[0].type");
  EXPECT_EQ(*e.code, "unsupported_value");
}

TEST(ChatCompletionRequestTest, OutOfRangeValues) {
  struct Case {
    const char* field;
    const char* param;
  } cases[] = {{R"("max_tokens":0)", "max_tokens"},          {R"("max_tokens":-5)", "max_tokens"},
               {R"("max_completion_tokens":0)", "max_completion_tokens"},
               {R"("temperature":2.5)", "temperature"},      {R"("temperature":-1)", "temperature"},
               {R"("top_p":0)", "top_p"},                    {R"("top_p":1.5)", "top_p"},
               {R"("min_p":2)", "min_p"},                    {R"("top_k":-2)", "top_k"},
               {R"("n":0)", "n"},                            {R"("n":1000)", "n"},
               {R"("presence_penalty":3)", "presence_penalty"}, {R"("frequency_penalty":-3)", "frequency_penalty"},
               {R"("repetition_penalty":0)", "repetition_penalty"}, {R"("top_logprobs":21,"logprobs":true)", "top_logprobs"},
               {R"("logit_bias":{"5":101})", "logit_bias.5"}, {R"("logit_bias":{"x":1})", "logit_bias"},
               {R"("logit_bias":{"-1":1})", "logit_bias"}, {R"("stop":"")", "stop"},
               {R"("stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"])", "stop"}};
  for (const auto& c : cases) {
    const std::string body = std::string(R"({"messages":[{"role":"user","content":"hi"}],)") + c.field + "}";
    const ApiError e = ErrorOf(body);
    EXPECT_EQ(e.status, 400) << body;
    ASSERT_TRUE(e.param) << body;
    EXPECT_EQ(*e.param, c.param) << body;
    EXPECT_EQ(*e.code, "invalid_value") << body;
  }
}

TEST(ChatCompletionRequestTest, NTooLargeFollowsLimits) {
  RequestLimits limits;
  limits.max_n = 4;
  const ApiError e = ErrorOf(R"({"messages":[{"role":"user","content":"hi"}],"n":5})", limits);
  EXPECT_EQ(*e.param, "n");
  EXPECT_NE(e.message.find("<= 4"), std::string::npos) << e.message;
}

TEST(ChatCompletionRequestTest, TopLogprobsNeedsLogprobs) {
  const ApiError e = ErrorOf(R"({"messages":[{"role":"user","content":"hi"}],"top_logprobs":2})");
  EXPECT_EQ(*e.param, "top_logprobs");
}

TEST(ChatCompletionRequestTest, StreamOptionsNeedStream) {
  ApiError e = ErrorOf(R"({"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}})");
  EXPECT_EQ(*e.param, "stream_options");
  e = ErrorOf(R"({"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"bogus":1}})");
  EXPECT_EQ(*e.param, "stream_options.bogus");
}

TEST(ChatCompletionRequestTest, RecognisedButUnsupportedFieldsAreNamed) {
  struct Case {
    const char* field;
    const char* param;
  } cases[] = {
      {R"("functions":[{"name":"f"}])", "functions"},
      {R"("function_call":{"name":"f"})", "function_call"},
      {R"("audio":{"voice":"x"})", "audio"},
      {R"("modalities":["text","audio"])", "modalities"},
      {R"("prediction":{"type":"content","content":"x"})", "prediction"},
      {R"("reasoning_effort":"high")", "reasoning_effort"},
      {R"("store":true)", "store"},
      {R"("service_tier":"turbo")", "service_tier"},
  };
  for (const auto& c : cases) {
    const std::string body = std::string(R"({"messages":[{"role":"user","content":"hi"}],)") + c.field + "}";
    const ApiError e = ErrorOf(body);
    EXPECT_EQ(e.status, 400) << body;
    ASSERT_TRUE(e.param) << body;
    EXPECT_EQ(*e.param, c.param) << body;
    EXPECT_NE(e.message.find(c.param), std::string::npos) << e.message;
  }
}

TEST(ChatCompletionRequestTest, OffValuesOfUnsupportedFeaturesAreAccepted) {
  auto r = ParseChatCompletionRequest(
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[],"tool_choice":"none","parallel_tool_calls":true,
          "response_format":{"type":"text"},"modalities":["text"],"store":false,"metadata":{"k":"v"},
          "service_tier":"auto","prompt_cache_key":"abc"})");
  EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST(ChatCompletionRequestTest, ServiceTierIsAWorkloadClass) {
  const std::pair<const char*, std::optional<WorkloadClass>> cases[] = {
      {"auto", std::nullopt},
      {"default", WorkloadClass::kInteractive},
      {"flex", WorkloadClass::kBatch},
      {"priority", WorkloadClass::kRealtime},
      {"batch", WorkloadClass::kBatch},
      {"realtime", WorkloadClass::kRealtime},
  };
  for (const auto& [tier, want] : cases) {
    auto r = ParseChatCompletionRequest(std::string(R"({"messages":[{"role":"user","content":"hi"}],"service_tier":")") +
                                        tier + "\"}");
    ASSERT_TRUE(r.ok()) << tier;
    EXPECT_EQ(r->options.service_tier, want) << tier;
  }
}

TEST(ChatCompletionRequestTest, UnknownFieldsAreRejectedUnlessLenient) {
  const char* body = R"({"messages":[{"role":"user","content":"hi"}],"frobnicate":1})";
  const ApiError e = ErrorOf(body);
  EXPECT_EQ(*e.code, "unknown_parameter");
  EXPECT_EQ(*e.param, "frobnicate");
  RequestLimits lenient;
  lenient.reject_unknown_fields = false;
  EXPECT_TRUE(ParseChatCompletionRequest(body, lenient).ok());
}

TEST(ChatCompletionRequestTest, UnknownMessageKeysAreIgnored) {
  auto r = ParseChatCompletionRequest(
      R"({"messages":[{"role":"assistant","content":"x","refusal":null,"annotations":[]},{"role":"user","content":"y"}]})");
  EXPECT_TRUE(r.ok()) << r.error().message;
}

}  // namespace
}  // namespace pagoda::api
