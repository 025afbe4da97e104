#include "tenancy/rate_limiter_headers.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace pagoda::tenancy {
namespace {

TEST(RateLimiterHeadersTest, FormatsResetsAsOpenAiDoes) {
  EXPECT_EQ(FormatResetDuration(0), "0s");
  EXPECT_EQ(FormatResetDuration(-5), "0s");
  EXPECT_EQ(FormatResetDuration(20), "20ms");
  EXPECT_EQ(FormatResetDuration(1000), "1s");
  EXPECT_EQ(FormatResetDuration(8640), "8.64s");
  EXPECT_EQ(FormatResetDuration(1001), "1.001s");
  EXPECT_EQ(FormatResetDuration(59'999), "59.999s");
  EXPECT_EQ(FormatResetDuration(360'000), "6m0s");
  EXPECT_EQ(FormatResetDuration(83'456), "1m23.456s");
  EXPECT_EQ(FormatResetDuration(3'723'000), "1h2m3s");
  EXPECT_EQ(FormatResetDuration(3'600'000), "1h0m0s");
}

TEST(RateLimiterHeadersTest, ListsRequestAndTokenLimitsAndRetryAfter) {
  const int64_t now = 1'000'000;
  auto h = RateLimitHeaders(LimitSnapshot{60, 59, now + 1000}, LimitSnapshot{150'000, 149'984, now + 6}, now, 1500);
  ASSERT_EQ(h.size(), 7u);
  EXPECT_EQ(h[0].name, "x-ratelimit-limit-requests");
  EXPECT_EQ(h[0].value, "60");
  EXPECT_EQ(h[1].name, "x-ratelimit-remaining-requests");
  EXPECT_EQ(h[1].value, "59");
  EXPECT_EQ(h[2].name, "x-ratelimit-reset-requests");
  EXPECT_EQ(h[2].value, "1s");
  EXPECT_EQ(h[3].name, "x-ratelimit-limit-tokens");
  EXPECT_EQ(h[4].name, "x-ratelimit-remaining-tokens");
  EXPECT_EQ(h[4].value, "149984");
  EXPECT_EQ(h[5].name, "x-ratelimit-reset-tokens");
  EXPECT_EQ(h[5].value, "6ms");
  EXPECT_EQ(h[6].name, "retry-after");
  EXPECT_EQ(h[6].value, "2");
}

TEST(RateLimiterHeadersTest, OmitsWhatIsNotLimited) {
  EXPECT_TRUE(RateLimitHeaders(std::nullopt, std::nullopt, 0).empty());
  auto h = RateLimitHeaders(std::nullopt, LimitSnapshot{10, -3, 0}, 0);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[1].value, "0");  // never negative
}

TEST(RateLimiterHeadersTest, RetryAfterIsWholeSecondsAtLeastOne) {
  EXPECT_EQ(RetryAfterSeconds(0), 1);
  EXPECT_EQ(RetryAfterSeconds(1), 1);
  EXPECT_EQ(RetryAfterSeconds(1000), 1);
  EXPECT_EQ(RetryAfterSeconds(1001), 2);
  EXPECT_EQ(RetryAfterSeconds(59'500), 60);
}

TEST(RateLimiterHeadersTest, ErrorBodyIsAnOpenAiErrorObject) {
  auto j = nlohmann::json::parse(RateLimitErrorBody("Rate limit reached \"x\"", "tokens"));
  EXPECT_EQ(j["error"]["message"], "Rate limit reached \"x\"");
  EXPECT_EQ(j["error"]["type"], "tokens");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["code"], "rate_limit_exceeded");
}

}  // namespace
}  // namespace pagoda::tenancy
