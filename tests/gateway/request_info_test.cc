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

TEST(RequestInfoTest, AClientsKvTransferParamsNeverReachAReplica) {
  // Only the gateway's prefill leg may ask a replica to ship KV somewhere.
  const std::string body =
      R"({"model":"a","prompt":"x","kv_transfer_params":{"do_remote_decode":true,"remote_addr":"evil:1"}})";
  for (const char* model : {"a", "b", ""}) {
    const auto j = nlohmann::json::parse(RewriteUpstreamBody(body, model, false));
    EXPECT_FALSE(j.contains("kv_transfer_params")) << model;
    EXPECT_EQ(j["prompt"], "x");
  }
}

TEST(RequestInfoTest, ClassComesFromTheHeaderElseTheServiceTierElseInteractive) {
  auto cls = [](const char* body, const char* header) {
    auto info = ParseRequestInfo(body);
    EXPECT_TRUE(info.ok());
    http::Request req;
    if (header != nullptr) req.headers.Add("X-Pagoda-Service-Tier", header);
    return RequestClass(info.ok() ? info.value() : RequestInfo{}, req);
  };
  EXPECT_EQ(cls(R"({"model":"m"})", nullptr), WorkloadClass::kInteractive);
  EXPECT_EQ(cls(R"({"model":"m","service_tier":"auto"})", nullptr), WorkloadClass::kInteractive);
  EXPECT_EQ(cls(R"({"model":"m","service_tier":"flex"})", nullptr), WorkloadClass::kBatch);
  EXPECT_EQ(cls(R"({"model":"m","service_tier":"priority"})", nullptr), WorkloadClass::kRealtime);
  EXPECT_EQ(cls(R"({"model":"m","service_tier":"batch"})", nullptr), WorkloadClass::kBatch);
  EXPECT_EQ(cls(R"({"model":"m","service_tier":7})", nullptr), WorkloadClass::kInteractive);
  EXPECT_EQ(cls(R"({"model":"m","service_tier":"flex"})", "realtime"), WorkloadClass::kRealtime);  // header wins
  EXPECT_EQ(cls(R"({"model":"m","service_tier":"priority"})", "flex"), WorkloadClass::kBatch);
  EXPECT_EQ(cls(R"({"model":"m","service_tier":"flex"})", "auto"), WorkloadClass::kBatch);  // "auto": as absent
  EXPECT_EQ(cls(R"({"model":"m"})", "nonsense"), WorkloadClass::kInteractive);
}

}  // namespace
}  // namespace pagoda::gateway
