#include "http/auth.h"

#include <gtest/gtest.h>

namespace pagoda::http {
namespace {

TEST(AuthTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(AuthTest, BearerToken) {
  Request r;
  EXPECT_TRUE(BearerTokenMatches(r, ""));  // auth disabled
  EXPECT_FALSE(BearerTokenMatches(r, "k"));
  r.headers.Add("authorization", "bearer k");
  EXPECT_TRUE(BearerTokenMatches(r, "k"));
  Request basic;
  basic.headers.Add("Authorization", "Basic k");
  EXPECT_FALSE(BearerTokenMatches(basic, "k"));
  auto denied = RequireBearerToken(basic, "k");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(denied->body.find("k\""), std::string::npos);  // the key is never echoed
}

TEST(MessageTest, ErrorResponseEscapesAndShapes) {
  const Response r = ErrorResponse(400, "bad \"x\"\n\xff", "bad_request");
  EXPECT_EQ(r.body,
            "{\"error\":{\"message\":\"bad \\\"x\\\"\\u000a\xef\xbf\xbd\",\"type\":\"invalid_request_error\","
            "\"param\":null,\"code\":\"bad_request\"}}");
}

}  // namespace
}  // namespace pagoda::http
