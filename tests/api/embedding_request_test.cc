// /v1/embeddings, /v1/rerank and /v1/score bodies: every accepted form of
// input, and each class of bad input with the field it names.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api/embedding_request.h"
#include "api/rerank_request.h"

namespace pagoda::api {
namespace {

TEST(EmbeddingRequestTest, AcceptsEveryInputForm) {
  auto one = ParseEmbeddingRequest(R"({"model":"m","input":"hello"})");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->inputs.size(), 1u);
  EXPECT_EQ(one->inputs[0].text, "hello");
  EXPECT_EQ(one->encoding_format, EncodingFormat::kFloat);
  auto many = ParseEmbeddingRequest(R"({"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":8})");
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->inputs.size(), 2u);
  EXPECT_EQ(many->encoding_format, EncodingFormat::kBase64);
  EXPECT_EQ(many->dimensions, 8);
  auto ids = ParseEmbeddingRequest(R"({"model":"m","input":[1,2,3]})");
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->inputs.size(), 1u);
  EXPECT_TRUE(ids->inputs[0].is_tokens);
  EXPECT_EQ(ids->inputs[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  auto lists = ParseEmbeddingRequest(R"({"model":"m","input":[[1],[2,3]],"truncate_prompt_tokens":4,"user":"u"})");
  ASSERT_TRUE(lists.ok());
  EXPECT_EQ(lists->inputs.size(), 2u);
  EXPECT_EQ(lists->truncate_prompt_tokens, 4);
  EXPECT_TRUE(lists->normalize);
  auto raw = ParseEmbeddingRequest(R"({"model":"m","input":"a","normalize":false})");
  ASSERT_TRUE(raw.ok());
  EXPECT_FALSE(raw->normalize);
}

TEST(EmbeddingRequestTest, RefusesBadInputNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model":"m","input":""})", "input"},
      {R"({"model":"m","input":[]})", "input"},
      {R"({"model":"m","input":["a",""]})", "input[1]"},
      {R"({"model":"m","input":[{"text":"a"}]})", "input[0]"},
      {R"({"model":"m","input":[1.5]})", "input[0]"},
      {R"({"model":"m","input":[-1]})", "input[0]"},
      {R"({"model":"m","input":"a","encoding_format":"int8"})", "encoding_format"},
      {R"({"model":"m","input":"a","dimensions":0})", "dimensions"},
      {R"({"model":"m","input":"a","normalize":"no"})", "normalize"},
      {R"({"model":"m","input":"a","bogus":1})", "bogus"},
      {R"({"input":"a"})", "model"},
      {R"({"model":"m"})", "input"},
  };
  for (const auto& [body, param] : cases) {
    auto r = ParseEmbeddingRequest(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().status, 400) << body;
    EXPECT_EQ(r.error().param.value_or(""), param) << body << ": " << r.error().message;
  }
  std::string big = R"({"model":"m","input":[)";
  for (int i = 0; i < kMaxEmbeddingInputs + 1; ++i) big += i ? ",\"a\"" : "\"a\"";
  big += "]}";
  EXPECT_FALSE(ParseEmbeddingRequest(big).ok());
}

TEST(EmbeddingRequestTest, Base64IsTheLittleEndianFloats) {
  // 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0.
  EXPECT_EQ(Base64Floats({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(Base64Floats({}), "");
}

TEST(RerankRequestTest, ParsesJinaAndCohereShapes) {
  auto r = ParseRerankRequest(
      R"({"model":"m","query":"q","documents":["a",{"text":"b"}],"top_n":1,"return_documents":false,"rank_fields":["text"]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->documents, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r->top_n, 1);
  EXPECT_FALSE(r->return_documents);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"model":"m","query":"q","documents":[1]})", "documents[0]"},
      {R"({"model":"m","query":"q","documents":[{"title":"t"}]})", "documents[0].text"},
      {R"({"model":"m","query":"q","documents":[]})", "documents"},
      {R"({"model":"m","query":"","documents":["a"]})", "query"},
      {R"({"model":"m","query":"q","documents":["a"],"top_n":0})", "top_n"},
      {R"({"model":"m","documents":["a"]})", "query"},
  };
  for (const auto& [body, param] : bad) {
    auto e = ParseRerankRequest(body);
    ASSERT_FALSE(e.ok()) << body;
    EXPECT_EQ(e.error().param.value_or(""), param) << body;
  }
}

TEST(ScoreRequestTest, PairsOneToManyAndPairwise) {
  auto one = ParseScoreRequest(R"({"model":"m","text_1":"q","text_2":["a","b"]})");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->text_1, (std::vector<std::string>{"q", "q"}));
  auto pairs = ParseScoreRequest(R"({"model":"m","text_1":["q","r"],"text_2":["a","b"]})");
  ASSERT_TRUE(pairs.ok());
  EXPECT_EQ(pairs->text_1[1], "r");
  auto bad = ParseScoreRequest(R"({"model":"m","text_1":["q","r"],"text_2":["a"]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param.value_or(""), "text_1");
  EXPECT_FALSE(ParseScoreRequest(R"({"model":"m","text_1":"q"})").ok());
}

}  // namespace
}  // namespace pagoda::api
