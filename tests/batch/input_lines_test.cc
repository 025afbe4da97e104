#include "batch/input_lines.h"

#include <gtest/gtest.h>

namespace pagoda::batch {
namespace {

std::string Chat(const std::string& id, const std::string& extra = "") {
  return R"({"custom_id":")" + id +
         R"(","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}])" +
         extra + "}}";
}

TEST(InputLinesTest, ValidLinesKeepTheirPlaceInTheFile) {
  const std::string file = Chat("a") + "\n\n" + Chat("b") + "\r\n";
  auto lines = CheckInputLines(file, "/v1/chat/completions");
  ASSERT_EQ(lines.size(), 2u);  // the blank line is not a request
  EXPECT_TRUE(lines[0].valid);
  EXPECT_TRUE(lines[1].valid);
  EXPECT_EQ(lines[0].line_no, 1);
  EXPECT_EQ(lines[1].line_no, 2);
  EXPECT_EQ(file.substr(static_cast<size_t>(lines[1].offset), static_cast<size_t>(lines[1].length)), Chat("b"));
  EXPECT_EQ(LineBody(file, lines[0]), R"({"messages":[{"content":"hi","role":"user"}],"model":"m"})");
}

TEST(InputLinesTest, EachBadLineFailsOnlyItself) {
  struct Case {
    std::string line;
    const char* code;
  } cases[] = {
      {"not json", "invalid_json"},
      {"[1,2]", "invalid_json"},
      {R"({"method":"POST","url":"/v1/chat/completions","body":{}})", "missing_custom_id"},
      {R"({"custom_id":"","method":"POST","url":"/v1/chat/completions","body":{}})", "missing_custom_id"},
      {R"({"custom_id":"x","method":"GET","url":"/v1/chat/completions","body":{}})", "invalid_method"},
      {R"({"custom_id":"x","method":"POST","url":"/v1/completions","body":{}})", "invalid_url"},
      {R"({"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":[]})", "invalid_body"},
      {Chat("x", R"(,"max_tokens":-1)"), "invalid_body"},
      {Chat("x", R"(,"stream":true)"), "invalid_body"},
      {R"({"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{"model":"m"}})", "invalid_body"},
  };
  for (const Case& c : cases) {
    const std::string file = Chat("ok1") + "\n" + c.line + "\n" + Chat("ok2") + "\n";
    auto lines = CheckInputLines(file, "/v1/chat/completions");
    ASSERT_EQ(lines.size(), 3u) << c.line;
    EXPECT_TRUE(lines[0].valid);
    EXPECT_FALSE(lines[1].valid) << c.line;
    EXPECT_EQ(lines[1].error_code, c.code) << c.line << " -> " << lines[1].error_message;
    EXPECT_FALSE(lines[1].error_message.empty());
    EXPECT_TRUE(lines[2].valid);
  }
}

TEST(InputLinesTest, ARepeatedCustomIdIsRefusedAfterItsFirstUse) {
  const std::string file = Chat("a") + "\n" + Chat("b") + "\n" + Chat("a") + "\n";
  auto lines = CheckInputLines(file, "/v1/chat/completions");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(lines[0].valid);
  EXPECT_TRUE(lines[1].valid);
  EXPECT_FALSE(lines[2].valid);
  EXPECT_EQ(lines[2].error_code, "duplicate_custom_id");
  EXPECT_EQ(lines[2].custom_id, "a");
}

TEST(InputLinesTest, ErrorsNeverEchoTheBody) {
  const std::string secret = "SECRET-PROMPT-TEXT";
  const std::string file = R"({"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{"messages":")" +
                           secret + R"("}})";
  auto lines = CheckInputLines(file, "/v1/chat/completions");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(lines[0].valid);
  EXPECT_EQ(lines[0].error_message.find(secret), std::string::npos) << lines[0].error_message;
}

TEST(InputLinesTest, EndpointsABatchMayName) {
  EXPECT_TRUE(IsBatchEndpoint("/v1/chat/completions"));
  EXPECT_TRUE(IsBatchEndpoint("/v1/completions"));
  EXPECT_FALSE(IsBatchEndpoint("/v1/embeddings"));
  EXPECT_FALSE(IsBatchEndpoint("/v1/files"));
}

}  // namespace
}  // namespace pagoda::batch
