#include "api/completion_request.h"

#include <gtest/gtest.h>

namespace pagoda::api {
namespace {

ApiError ErrorOf(std::string_view body) {
  auto r = ParseCompletionRequest(body);
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? ApiError{} : r.error();
}

TEST(CompletionRequestTest, PromptForms) {
  auto r = ParseCompletionRequest(R"({"prompt":"hello"})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_FALSE(r->prompts[0].is_tokens);
  EXPECT_EQ(r->prompts[0].text, "hello");

  r = ParseCompletionRequest(R"({"prompt":""})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompts[0].text, "");

  r = ParseCompletionRequest(R"({"prompt":[1,403,407]})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->prompts.size(), 1u);
  EXPECT_TRUE(r->prompts[0].is_tokens);
  EXPECT_EQ(r->prompts[0].tokens, (std::vector<int32_t>{1, 403, 407}));

  r = ParseCompletionRequest(R"({"prompt":["a","b"]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->prompts.size(), 2u);

  r = ParseCompletionRequest(R"({"prompt":[[1,2],[3]], "echo": true, "logprobs": 5, "best_of": 1})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->prompts[1].tokens, (std::vector<int32_t>{3}));
  EXPECT_TRUE(r->echo);
  EXPECT_EQ(*r->logprobs, 5);
}

TEST(CompletionRequestTest, BadPrompts) {
  EXPECT_EQ(*ErrorOf(R"({"model":"m"})").code, "missing_required_parameter");
  EXPECT_EQ(*ErrorOf(R"({"prompt":null})").code, "missing_required_parameter");
  EXPECT_EQ(*ErrorOf(R"({"prompt":[]})").code, "empty_array");
  EXPECT_EQ(*ErrorOf(R"({"prompt":[[]]})").param, "prompt[0]");
  EXPECT_EQ(*ErrorOf(R"({"prompt":7})").code, "invalid_type");
  EXPECT_EQ(*ErrorOf(R"({"prompt":[1,-5]})").param, "prompt[1]");
  EXPECT_EQ(*ErrorOf(R"({"prompt":[1,"a"]})").param, "prompt[1]");
  EXPECT_EQ(*ErrorOf(R"({"prompt":["a",1]})").param, "prompt[1]");
  EXPECT_EQ(*ErrorOf(R"({"prompt":[1,99999999999]})").param, "prompt[1]");
}

TEST(CompletionRequestTest, CompletionOnlyFields) {
  EXPECT_EQ(*ErrorOf(R"({"prompt":"x","logprobs":6})").param, "logprobs");
  EXPECT_EQ(*ErrorOf(R"({"prompt":"x","logprobs":true})").code, "invalid_type");
  EXPECT_EQ(*ErrorOf(R"({"prompt":"x","echo":1})").param, "echo");
  EXPECT_EQ(*ErrorOf(R"({"prompt":"x","suffix":"tail"})").code, "unsupported_parameter");
  EXPECT_EQ(*ErrorOf(R"({"prompt":"x","best_of":3})").code, "unsupported_value");
  EXPECT_TRUE(ParseCompletionRequest(R"({"prompt":"x","suffix":"","best_of":2,"n":2})").ok());
  EXPECT_EQ(*ErrorOf(R"({"prompt":"x","messages":[]})").code, "unknown_parameter");
  EXPECT_EQ(*ErrorOf(R"({"prompt":"x","max_tokens":0})").param, "max_tokens");
}

TEST(CompletionRequestTest, IgnoreEosExtension) {
  auto on = ParseCompletionRequest(R"({"prompt":"x","ignore_eos":true})");
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->options.ignore_eos);
  auto absent = ParseCompletionRequest(R"({"prompt":"x","ignore_eos":null})");
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->options.ignore_eos);
  EXPECT_EQ(*ErrorOf(R"({"prompt":"x","ignore_eos":"yes"})").param, "ignore_eos");
}

}  // namespace
}  // namespace pagoda::api
