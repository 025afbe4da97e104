#include "tokenizer/jinja/value.h"

#include <gtest/gtest.h>

#include "tokenizer/jinja/json_dump.h"

namespace pagoda::jinja {
namespace {

TEST(ValueTest, FormatFloatAsPythonRepr) {
  EXPECT_EQ(FormatFloat(1.0), "1.0");
  EXPECT_EQ(FormatFloat(0.1), "0.1");
  EXPECT_EQ(FormatFloat(-2.5), "-2.5");
  EXPECT_EQ(FormatFloat(1e16), "1e+16");
  EXPECT_EQ(FormatFloat(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(FormatFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatFloat(0.00001), "1e-05");
  EXPECT_EQ(FormatFloat(1.5e-7), "1.5e-07");
}

TEST(ValueTest, StrAndRepr) {
  EXPECT_EQ(Value().Str(), "");
  EXPECT_EQ(Value::None().Str(), "None");
  EXPECT_EQ(Value(true).Str(), "True");
  EXPECT_EQ(Value("it's").Repr(), "\"it's\"");
  EXPECT_EQ(Value(List{Value("a"), Value(int64_t{1}), Value::None()}).Str(), "['a', 1, None]");
  EXPECT_EQ(Value(Dict{{"k", Value("v")}}).Str(), "{'k': 'v'}");
}

TEST(ValueTest, TruthinessFollowsPython) {
  EXPECT_FALSE(Value().Truthy());
  EXPECT_FALSE(Value::None().Truthy());
  EXPECT_FALSE(Value(int64_t{0}).Truthy());
  EXPECT_FALSE(Value(0.0).Truthy());
  EXPECT_FALSE(Value("").Truthy());
  EXPECT_FALSE(Value(List{}).Truthy());
  EXPECT_FALSE(Value(Dict{}).Truthy());
  EXPECT_TRUE(Value::Namespace({}).Truthy());
  EXPECT_TRUE(Value("0").Truthy());
}

TEST(ValueTest, FromJsonKeepsKeyOrder) {
  const auto j = nlohmann::ordered_json::parse(R"({"z": 1, "a": [true, 2.5, null, "s"], "m": {}})");
  const Value v = Value::FromJson(j);
  ASSERT_TRUE(v.is_dict());
  EXPECT_EQ(v.as_dict()[0].first, "z");
  EXPECT_EQ(v.as_dict()[1].first, "a");
  EXPECT_EQ(JsonDump(v, {}), R"({"z": 1, "a": [true, 2.5, null, "s"], "m": {}})");
}

TEST(ValueTest, EqualsIsDeepAndNumeric) {
  EXPECT_TRUE(Value(int64_t{1}).Equals(Value(1.0)));
  EXPECT_TRUE(Value(true).Equals(Value(int64_t{1})));
  EXPECT_FALSE(Value("1").Equals(Value(int64_t{1})));
  EXPECT_TRUE(Value(Dict{{"a", Value(int64_t{1})}}).Equals(Value(Dict{{"a", Value(1.0)}})));
  EXPECT_FALSE(Value().Equals(Value::None()));
}

TEST(ValueTest, CodePoints) {
  EXPECT_EQ(CodePointCount("h\xC3\xA9\xF0\x9F\x98\x80"), 3u);
  EXPECT_EQ(SplitCodePoints("a\xC3\xA9").size(), 2u);
}

}  // namespace
}  // namespace pagoda::jinja
