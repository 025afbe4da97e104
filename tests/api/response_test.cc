#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/chat_response.h"
#include "api/completion_response.h"
#include "api/json_text.h"
#include "api/model_list.h"
#include "api/tokenize.h"

namespace pagoda::api {
namespace {

using nlohmann::json;

TEST(ApiErrorTest, ShapeHasAllFourFieldsWithNulls) {
  EXPECT_EQ(ModelNotFound("x").ToJson(),
            json::parse(R"({"error":{"message":"The model 'x' does not exist.","type":"invalid_request_error",
                                     "param":"model","code":"model_not_found"}})"));
  EXPECT_EQ(ModelNotFound("x").status, 404);
  const json j = ServerError("boom").ToJson();
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(j["error"]["type"], "server_error");
  EXPECT_EQ(InvalidApiKey().status, 401);
  EXPECT_EQ(BodyTooLarge(10).status, 413);
}

TEST(UsageTest, Shape) {
  Usage u{10, 5, 4};
  EXPECT_EQ(u.ToJson(), json::parse(R"({"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,
                                         "prompt_tokens_details":{"cached_tokens":4}})"));
}

TEST(ChatCompletionTest, ExactShape) {
  ChatCompletion c;
  c.id = "chatcmpl-1";
  c.created = 1700000000;
  c.model = "m";
  c.system_fingerprint = "fp";
  c.choices.push_back(ChatChoice{0, "Hello", FinishReason::kLength, std::nullopt});
  c.usage = Usage{3, 1, 0};
  EXPECT_EQ(c.ToJson(), json::parse(R"({
    "id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","system_fingerprint":"fp",
    "choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null},"logprobs":null,
                "finish_reason":"length"}],
    "usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4,"prompt_tokens_details":{"cached_tokens":0}}})"));
}

TEST(ChatCompletionTest, LogprobsShape) {
  std::vector<TokenLogprob> lp{{"Hi", -0.25, {{"Hi", -0.25}, {"\xe2\x80", -2.0}}},
                               {"x", -INFINITY, {}}};
  EXPECT_EQ(ChatLogprobsToJson(lp), json::parse(R"({"content":[
      {"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[
          {"token":"Hi","logprob":-0.25,"bytes":[72,105]},
          {"token":"bytes:\\xe2\\x80","logprob":-2.0,"bytes":[226,128]}]},
      {"token":"x","logprob":-9999.0,"bytes":[120],"top_logprobs":[]}],"refusal":null})"));
}

TEST(ChatStreamFormatterTest, ChunkSequenceWithUsage) {
  ChatStreamFormatter f("chatcmpl-1", 5, "m", "fp", /*include_usage=*/true);
  const json role = json::parse(f.RoleChunk(0));
  EXPECT_EQ(role, json::parse(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,"model":"m",
      "system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,
      "finish_reason":null}],"usage":null})"));
  const json content = json::parse(f.ContentChunk(0, "Hel"));
  EXPECT_EQ(content["choices"][0]["delta"], json::parse(R"({"content":"Hel"})"));
  EXPECT_TRUE(content["usage"].is_null());
  const json fin = json::parse(f.FinishChunk(0, FinishReason::kStop));
  EXPECT_EQ(fin["choices"][0]["delta"], json::object());
  EXPECT_EQ(fin["choices"][0]["finish_reason"], "stop");
  const json usage = json::parse(f.UsageChunk(Usage{2, 3, 1}));
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["total_tokens"], 5);
  EXPECT_EQ(kSseDone, "[DONE]");
}

TEST(ChatStreamFormatterTest, NoUsageFieldWithoutIncludeUsage) {
  ChatStreamFormatter f("id", 5, "m", "fp", false);
  EXPECT_FALSE(json::parse(f.ContentChunk(0, "x")).contains("usage"));
}

TEST(ChatStreamFormatterTest, PartialUtf8NeverThrows) {
  ChatStreamFormatter f("id", 5, "m", "fp", false);
  const json j = json::parse(f.ContentChunk(0, "a\xe2\x80"));
  EXPECT_EQ(j["choices"][0]["delta"]["content"], "a\xef\xbf\xbd");
}

TEST(CompletionTest, ExactShapeWithLogprobs) {
  Completion c;
  c.id = "cmpl-1";
  c.created = 7;
  c.model = "m";
  c.system_fingerprint = "fp";
  CompletionLogprobs lp;
  lp.tokens = {{"Once", std::nullopt, {}}, {" upon", -0.5, {{" upon", -0.5}, {" in", -1.5}}}};
  lp.text_offset_start = 0;
  c.choices.push_back(CompletionChoice{0, "Once upon", FinishReason::kStop, lp});
  c.usage = Usage{1, 1, 0};
  EXPECT_EQ(c.ToJson(), json::parse(R"({"id":"cmpl-1","object":"text_completion","created":7,"model":"m",
    "system_fingerprint":"fp","choices":[{"index":0,"text":"Once upon","finish_reason":"stop",
    "logprobs":{"tokens":["Once"," upon"],"token_logprobs":[null,-0.5],"top_logprobs":[null,{" upon":-0.5," in":-1.5}],
                "text_offset":[0,4]}}],
    "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}})"));
}

TEST(CompletionStreamFormatterTest, Chunks) {
  CompletionStreamFormatter f("cmpl-1", 7, "m", "fp", true);
  const json t = json::parse(f.TextChunk(1, "ab"));
  EXPECT_EQ(t, json::parse(R"({"id":"cmpl-1","object":"text_completion","created":7,"model":"m",
      "system_fingerprint":"fp","choices":[{"index":1,"text":"ab","logprobs":null,"finish_reason":null}],
      "usage":null})"));
  EXPECT_EQ(json::parse(f.FinishChunk(1, FinishReason::kLength))["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(json::parse(f.UsageChunk(Usage{1, 2, 0}))["choices"], json::array());
}

TEST(ModelListTest, Shape) {
  ModelList l;
  l.data.push_back(ModelCard{"stories", 1, "pagoda", 2048});
  EXPECT_EQ(l.ToJson(), json::parse(R"({"object":"list","data":[{"id":"stories","object":"model","created":1,
      "owned_by":"pagoda","max_model_len":2048}]})"));
}

TEST(ResponseIdTest, PrefixedAndUnique) {
  const std::string a = NewResponseId("chatcmpl"), b = NewResponseId("chatcmpl");
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 24u);
  EXPECT_NE(a, b);
}

TEST(TokenizeTest, RequestsAndResponses) {
  auto t = ParseTokenizeRequest(R"({"prompt":"hi","add_special_tokens":false})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->text, "hi");
  EXPECT_FALSE(t->add_special);
  EXPECT_TRUE(ParseTokenizeRequest(R"({"messages":[{"role":"user","content":"x"}]})").ok());
  EXPECT_FALSE(ParseTokenizeRequest(R"({})").ok());
  EXPECT_FALSE(ParseTokenizeRequest(R"({"prompt":"a","content":"b"})").ok());
  auto d = ParseDetokenizeRequest(R"({"tokens":[1,2]})");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(*ParseDetokenizeRequest(R"({"tokens":[-1]})").error().param, "tokens[0]");
  EXPECT_EQ(TokenizeResponseJson({1, 2}, 2048), json::parse(R"({"tokens":[1,2],"count":2,"max_model_len":2048})"));
  EXPECT_EQ(DetokenizeResponseJson("hi"), json::parse(R"({"prompt":"hi","content":"hi"})"));
}

TEST(Utf8Test, Validation) {
  EXPECT_TRUE(IsValidUtf8("plain \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\x80"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xed\xbf\xbf"));      // surrogate
}

}  // namespace
}  // namespace pagoda::api
