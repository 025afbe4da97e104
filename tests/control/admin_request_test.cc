// Readers of admin requests: body fields, query strings, ids and time bounds.
#include "control/admin_request.h"

#include <gtest/gtest.h>

namespace pagoda::control {
namespace {

using json = nlohmann::json;

TEST(AdminRequestTest, RefusesUnknownFieldsNamingThem) {
  const json body = {{"name", "x"}, {"colour", "red"}};
  auto e = CheckFields(body, {"name"});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "colour");
  EXPECT_EQ(e->code, "unknown_parameter");
  EXPECT_FALSE(CheckFields(body, {"name", "colour"}));
}

TEST(AdminRequestTest, ReadsTypedFieldsAndTreatsNullAsAbsent) {
  const json body = json::parse(R"({"s":"ok","i":5,"f":2.5,"b":true,"l":["a","b","a"],"n":null,"neg":-3})");
  std::string s = "keep";
  bool present = true;
  EXPECT_FALSE(ReadString(body, "n", &s, &present));
  EXPECT_FALSE(present);
  EXPECT_EQ(s, "keep");
  EXPECT_FALSE(ReadString(body, "s", &s, &present));
  EXPECT_TRUE(present);
  EXPECT_EQ(s, "ok");
  int64_t i = 0;
  EXPECT_FALSE(ReadInt(body, "i", 0, 10, &i));
  EXPECT_EQ(i, 5);
  EXPECT_EQ(ReadInt(body, "neg", 0, 10, &i)->code, "invalid_value");
  EXPECT_EQ(ReadInt(body, "f", 0, 10, &i)->code, "invalid_type");
  EXPECT_EQ(ReadInt(body, "s", 0, 10, &i)->param, "s");
  double d = 0;
  EXPECT_FALSE(ReadNumber(body, "f", 0, 10, true, &d));
  EXPECT_EQ(d, 2.5);
  EXPECT_FALSE(ReadNumber(body, "i", 0, 10, true, &d));  // integers are numbers
  EXPECT_TRUE(ReadNumber(body, "neg", 0, 10, false, &d));
  bool b = false;
  EXPECT_FALSE(ReadBool(body, "b", &b));
  EXPECT_TRUE(b);
  EXPECT_EQ(ReadBool(body, "i", &b)->code, "invalid_type");
  std::vector<std::string> l;
  EXPECT_FALSE(ReadStringList(body, "l", &l));
  EXPECT_EQ(l, (std::vector<std::string>{"a", "b"}));  // duplicates dropped
  EXPECT_EQ(ReadStringList(body, "s", &l)->code, "invalid_type");
}

TEST(AdminRequestTest, RefusesControlBytesOversizedAndInvalidUtf8Strings) {
  std::string s;
  EXPECT_EQ(ReadString(json{{"s", "a\nb"}}, "s", &s)->code, "invalid_value");
  EXPECT_EQ(ReadString(json{{"s", std::string(257, 'x')}}, "s", &s)->code, "invalid_value");
  EXPECT_FALSE(ReadString(json{{"s", std::string(256, 'x')}}, "s", &s));
  json bad = json::object();
  bad["s"] = std::string("a\xff");
  EXPECT_EQ(ReadString(bad, "s", &s)->code, "invalid_utf8");
}

TEST(AdminRequestTest, SlugsAreLowercaseIdsOfAtMost64Bytes) {
  EXPECT_TRUE(IsSlug("ten_abc-123"));
  EXPECT_FALSE(IsSlug(""));
  EXPECT_FALSE(IsSlug("Acme"));
  EXPECT_FALSE(IsSlug("a b"));
  EXPECT_FALSE(IsSlug("x';--"));
  EXPECT_FALSE(IsSlug(std::string("a\0b", 3)));
  EXPECT_FALSE(IsSlug(std::string(65, 'a')));
  auto e = CheckSlug("tenant", "pgd-SECRETVALUE");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message.find("SECRET"), std::string::npos);
}

TEST(AdminRequestTest, DecodesQueriesAndRefusesUnknownOrRepeatedNames) {
  auto q = ParseQuery("tenant=acme&model=llama%203%2B&group_by=tenant,day&x=", {"tenant", "model", "group_by", "x"});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q.value().at("tenant"), "acme");
  EXPECT_EQ(q.value().at("model"), "llama 3+");
  EXPECT_EQ(q.value().at("group_by"), "tenant,day");
  EXPECT_EQ(q.value().at("x"), "");
  EXPECT_EQ(ParseQuery("a=1", {"b"}).error().code, "unknown_parameter");
  EXPECT_EQ(ParseQuery("b=1&b=2", {"b"}).error().status, 400);
  EXPECT_EQ(ParseQuery("b=%4", {"b"}).error().status, 400);
  EXPECT_EQ(ParseQuery("b=%ff", {"b"}).error().code, "invalid_utf8");
  EXPECT_TRUE(ParseQuery("", {}).ok());
  EXPECT_EQ(PercentDecode("a+b%2Fc"), "a b/c");
  EXPECT_FALSE(PercentDecode("%"));
  EXPECT_FALSE(PercentDecode("%g0"));
}

TEST(AdminRequestTest, TimeBoundsAreUnixSecondsOrUtcDates) {
  EXPECT_EQ(ParseTimeParam("from", "1767225600", false).value(), 1767225600000);
  EXPECT_EQ(ParseTimeParam("from", "2026-01-01", false).value(), 1767225600000);
  EXPECT_EQ(ParseTimeParam("to", "2026-01-01", true).value(), 1767225600000 + 86'400'000);
  EXPECT_EQ(ParseTimeParam("to", "2024-02-29", false).value(), 1709164800000);
  for (const char* bad : {"", "2026-02-30", "2026-13-01", "2026-1-01", "26-01-01", "2026-01-01x", "-5", "1e9",
                          "9999999999999999", "yesterday"}) {
    auto t = ParseTimeParam("from", bad, false);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().param, "from") << bad;
  }
}

}  // namespace
}  // namespace pagoda::control
