#include "chat/glm_arguments.h"

#include <gtest/gtest.h>

namespace pagoda::chat {
namespace {

using Json = nlohmann::ordered_json;

TEST(GlmArgumentsTest, DeclaredStringsStayStrings) {
  const Json s = Json::parse(R"({"type": "string"})");
  EXPECT_EQ(GlmArgumentJson("75001", &s), "\"75001\"");
  EXPECT_EQ(GlmArgumentJson("true", &s), "\"true\"");
  const Json nullable = Json::parse(R"({"type": ["string", "null"]})");
  EXPECT_EQ(GlmArgumentJson("null", &nullable), "\"null\"");
  EXPECT_EQ(GlmArgumentJson(" a\n", &s), "\" a\\n\"");  // kept as written
}

TEST(GlmArgumentsTest, OtherValuesAreJsonWhenTheyParse) {
  const Json i = Json::parse(R"({"type": "integer"})");
  EXPECT_EQ(GlmArgumentJson(" 3 ", &i), "3");
  EXPECT_EQ(GlmArgumentJson("[1, 2]", nullptr), "[1, 2]");
  EXPECT_EQ(GlmArgumentJson("{\"a\": null}", nullptr), "{\"a\": null}");
  EXPECT_EQ(GlmArgumentJson("Paris", nullptr), "\"Paris\"");
  EXPECT_EQ(GlmArgumentJson("three", &i), "\"three\"");  // not JSON: a string, as vLLM falls back
  EXPECT_EQ(GlmArgumentJson("", nullptr), "\"\"");
  EXPECT_EQ(GlmArgumentJson("bad \xff", nullptr), "\"bad \xef\xbf\xbd\"");  // invalid UTF-8 replaced
}

TEST(GlmArgumentsTest, PropertySchemaLookup) {
  api::ToolFunction f;
  f.name = "f";
  f.parameters = Json::parse(R"({"type": "object", "properties": {"k": {"type": "string"}}})");
  api::ToolFunction g;
  g.name = "g";
  const std::vector<api::ToolFunction> tools = {f, g};
  const Json* k = GlmPropertySchema(tools, "f", "k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ((*k)["type"], "string");
  EXPECT_EQ(GlmPropertySchema(tools, "f", "other"), nullptr);
  EXPECT_EQ(GlmPropertySchema(tools, "g", "k"), nullptr);
  EXPECT_EQ(GlmPropertySchema(tools, "h", "k"), nullptr);
}

}  // namespace
}  // namespace pagoda::chat
