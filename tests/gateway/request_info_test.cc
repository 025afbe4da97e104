#include "gateway/request_info.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pagoda::gateway {
namespace {

TEST(RequestInfoTest, ReadsIncludeUsage) {
  auto a = ParseRequestInfo(R"({"model":"m","stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->include_usage);
  auto b = ParseRequestInfo(R"({"model":"m","stream":true,"stream_options":{"include_usage":"yes"}})");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->include_usage);
  auto c = ParseRequestInfo(R"({"model":"m","stream":true})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->include_usage);
}

TEST(RequestInfoTest, ForcedUsageIsAddedToStreamsOnly) {
  const auto j = nlohmann::json::parse(
      RewriteUpstreamBody(R"({"model":"a","stream":true,"messages":[{"role":"user","content":"hi"}]})", "b", true));
  EXPECT_EQ(j["model"], "b");
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["messages"][0]["content"], "hi");
  // Other stream options survive.
  const auto k = nlohmann::json::parse(RewriteUpstreamBody(
      R"({"model":"a","stream":true,"stream_options":{"continuous_usage_stats":true}})", "", true));
  EXPECT_EQ(k["model"], "a");
  EXPECT_EQ(k["stream_options"]["include_usage"], true);
  EXPECT_EQ(k["stream_options"]["continuous_usage_stats"], true);
  // A non-streamed body is untouched (byte for byte) when the model matches.
  const std::string plain = R"({"model":"a",  "prompt":"x"})";
  EXPECT_EQ(RewriteUpstreamBody(plain, "a", true), plain);
  EXPECT_EQ(RewriteUpstreamBody(plain, "", true), plain);
  // Not forced: stream_options stay as the client sent them.
  const std::string stream = R"({"model":"a","stream":true})";
  EXPECT_EQ(RewriteUpstreamBody(stream, "a", false), stream);
  EXPECT_EQ(RewriteModel(stream, "a"), stream);
}

}  // namespace
}  // namespace pagoda::gateway
