// RequestTokenizer on vocabulary-only GGUFs (no weights in the file). The
// references are built by hand here: the ChatML text the default template
// renders, tokenized by the model's tokenizer. The server-side equivalence
// (same ids as a running `pagoda serve`, same cached blocks) is in
// tests/gateway_server/.
#include "gateway/request_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_paths.h"

namespace pagoda::gateway {
namespace {

using nlohmann::json;
constexpr const char* kVocab = "ggml-vocab-gpt-2.gguf";  // BPE, no chat template: ChatML default

class RequestTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_REQUIRE_TESTDATA(kVocab);
    auto t = RequestTokenizer::FromGguf(testing::TestDataPath(kVocab));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(t).value();
  }
  std::vector<int32_t> Encode(const std::string& text, bool add_special) const {
    return tok_->tokenizer().Encode(text, add_special, /*parse_special=*/true);
  }
  std::unique_ptr<RequestTokenizer> tok_;
};

TEST_F(RequestTokenizerTest, ChatRequestIsTheRenderedChatMlConversation) {
  const json body = {{"model", "m"},
                     {"messages",
                      {{{"role", "system"}, {"content", "You are terse."}},
                       {{"role", "user"}, {"content", "Hi there"}},
                       {{"role", "assistant"}, {"content", "Hello."}},
                       {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Tell me more"}}}}}}}};
  auto ids = tok_->Tokens("/v1/chat/completions", body.dump());
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  const std::string text =
      "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
      "<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\nTell me more<|im_end|>\n"
      "<|im_start|>assistant\n";
  std::vector<int32_t> want = Encode(text, false);
  const Tokenizer& t = tok_->tokenizer();
  if (t.add_bos() && t.bos() >= 0 && (want.empty() || want.front() != t.bos())) want.insert(want.begin(), t.bos());
  EXPECT_EQ(*ids, want);
}

TEST_F(RequestTokenizerTest, ToolsEnterThePromptUnlessToolChoiceIsNone) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}}};
  auto plain = tok_->Tokens("/v1/chat/completions", body.dump());
  body["tools"] = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Current weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}}])");
  auto with_tools = tok_->Tokens("/v1/chat/completions", body.dump());
  body["tool_choice"] = "none";
  auto none = tok_->Tokens("/v1/chat/completions", body.dump());
  ASSERT_TRUE(plain.ok() && with_tools.ok() && none.ok());
  EXPECT_GT(with_tools->size(), plain->size());
  EXPECT_EQ(*none, *plain);
  // ChatML renders no tools itself: they are described in a system message.
  const std::string rendered = tok_->tokenizer().Decode(*with_tools);
  EXPECT_NE(rendered.find("get_weather"), std::string::npos);
}

TEST_F(RequestTokenizerTest, CompletionPromptsAsTheServerEncodesThem) {
  auto ids = tok_->Tokens("/v1/completions", json({{"prompt", "Once upon a time"}}).dump());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, Encode("Once upon a time", true));
  // Several prompts: the first routes.
  ids = tok_->Tokens("/v1/completions", json({{"prompt", {"The first document", "another"}}}).dump());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, Encode("The first document", true));
  // Token ids are taken as given, also in a list of lists.
  ids = tok_->Tokens("/v1/completions", json({{"prompt", {{5, 6, 7}, {8}}}}).dump());
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{5, 6, 7}));
}

TEST_F(RequestTokenizerTest, BadBodiesAndPathsAreErrorsNotCrashes) {
  EXPECT_FALSE(tok_->Tokens("/v1/chat/completions", "{not json").ok());
  EXPECT_FALSE(tok_->Tokens("/v1/chat/completions", R"({"messages": []})").ok());
  EXPECT_FALSE(tok_->Tokens("/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": 1}]})").ok());
  EXPECT_FALSE(tok_->Tokens("/v1/completions", R"({"prompt": {"a": 1}})").ok());
  EXPECT_FALSE(tok_->Tokens("/v1/completions", "").ok());
  EXPECT_FALSE(tok_->Tokens("/v1/embeddings", R"({"input": "x"})").ok());
}

TEST(RequestTokenizerLoadTest, MissingOrBrokenFilesAreErrors) {
  EXPECT_FALSE(RequestTokenizer::FromGguf("/nonexistent/model.gguf").ok());
  const auto path = testing::TempDirForProcess() / "not_a_gguf.gguf";
  { std::FILE* f = std::fopen(path.c_str(), "wb"); std::fputs("GGUF but not really", f); std::fclose(f); }
  EXPECT_FALSE(RequestTokenizer::FromGguf(path.string()).ok());
}

}  // namespace
}  // namespace pagoda::gateway
