#include "control/tenant_sla.h"

#include <algorithm>
#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace pagoda::control {
namespace {

using Clock = TenantSla::Clock;

const TenantSla::Figures* Find(const std::vector<TenantSla::Figures>& all, const std::string& t) {
  for (const auto& f : all) {
    if (f.tenant == t) return &f;
  }
  return nullptr;
}

// Nearest-rank quantiles of a shuffled 1..100 ms are 50 ms and 95 ms.
TEST(TenantSlaTest, QuantilesAreNearestRankOverTheWindow) {
  TenantSla sla(std::chrono::seconds(300));
  std::vector<int> ms(100);
  for (int i = 0; i < 100; ++i) ms[i] = i + 1;
  std::shuffle(ms.begin(), ms.end(), std::mt19937(3));
  const auto t0 = Clock::now();
  for (int v : ms) {
    RequestTiming t;
    t.tenant = "acme";
    t.ttft_seconds = v / 1000.0;
    t.mean_itl_seconds = v / 10000.0;
    t.completion_tokens = 6;
    sla.Record(t, t0);
  }
  const auto all = sla.Snapshot(t0);
  const auto* f = Find(all, "acme");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->requests, 100);
  EXPECT_DOUBLE_EQ(f->ttft_p50, 0.050);
  EXPECT_DOUBLE_EQ(f->ttft_p95, 0.095);
  EXPECT_DOUBLE_EQ(f->itl_p50, 0.0050);
  EXPECT_DOUBLE_EQ(f->itl_p95, 0.0095);
  EXPECT_DOUBLE_EQ(f->tokens_per_second, 600.0 / 60.0);
  EXPECT_EQ(f->error_rate, 0);
}

TEST(TenantSlaTest, OldSamplesLeaveTheWindowAndTenantsStayApart) {
  TenantSla sla(std::chrono::seconds(60));
  const auto t0 = Clock::now();
  RequestTiming slow{"a", "m", true, 2.0, 0.1, 10};
  RequestTiming fast{"a", "m", true, 0.1, 0.01, 10};
  RequestTiming failed{"b", "m", false, -1, -1, 0};
  sla.Record(slow, t0);
  sla.Record(fast, t0 + std::chrono::seconds(50));
  sla.Record(failed, t0 + std::chrono::seconds(50));
  sla.Record(RequestTiming{"b", "m", true, 0.2, -1, 1}, t0 + std::chrono::seconds(50));
  const auto all = sla.Snapshot(t0 + std::chrono::seconds(90));
  const auto* a = Find(all, "a");
  const auto* b = Find(all, "b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->requests, 1);  // the slow one is 90 s old
  EXPECT_DOUBLE_EQ(a->ttft_p95, 0.1);
  EXPECT_EQ(b->requests, 2);
  EXPECT_DOUBLE_EQ(b->error_rate, 0.5);
  EXPECT_DOUBLE_EQ(b->ttft_p50, 0.2);  // the failed request has no first token
  EXPECT_EQ(b->itl_p50, 0);
}

TEST(TenantSlaTest, ThroughputIsReportedAgainstTheReservation) {
  TenantSla sla;
  sla.SetReservation("p", "llama", 100);
  sla.SetReservation("p", "qwen", 20);
  const auto t0 = Clock::now();
  sla.Record(RequestTiming{"p", "llama", true, 0.1, 0.01, 3600}, t0);
  const nlohmann::json j = sla.ToJson(t0);
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["data"][0]["reserved_tokens_per_second"].get<double>(), 120.0);
  EXPECT_DOUBLE_EQ(j["data"][0]["tokens_per_second"].get<double>(), 60.0);
  EXPECT_DOUBLE_EQ(j["data"][0]["throughput_vs_reservation"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(sla.TokensPerSecond("p", "llama", t0), 60.0);
  EXPECT_DOUBLE_EQ(sla.TokensPerSecond("p", "qwen", t0), 0.0);
  EXPECT_DOUBLE_EQ(sla.TokensPerSecond("p", "", t0 + std::chrono::seconds(61)), 0.0);
  sla.SetReservation("p", "qwen", 0);
  EXPECT_DOUBLE_EQ(sla.Snapshot(t0)[0].reserved_tokens_per_second, 100.0);
}

TEST(TenantSlaTest, ThroughputSurvivesABurstOfFailingRequests) {
  // More failures than the sample ring holds (they carry no tokens) must
  // not hide the tokens of the minute: admission's priority reads them.
  TenantSla sla(std::chrono::seconds(300), /*max_samples=*/64);
  const auto t0 = Clock::now();
  sla.Record(RequestTiming{"p", "llama", true, 0.1, 0.01, 1800}, t0);
  sla.Record(RequestTiming{"p", "qwen", true, 0.1, 0.01, 1800}, t0 + std::chrono::seconds(1));
  for (int i = 0; i < 1000; ++i) sla.Record(RequestTiming{"p", "llama", false, -1, -1, 0}, t0 + std::chrono::seconds(2));
  const auto at = t0 + std::chrono::seconds(3);
  EXPECT_DOUBLE_EQ(sla.TokensPerSecond("p", "llama", at), 30.0);
  EXPECT_DOUBLE_EQ(sla.TokensPerSecond("p", "", at), 60.0);
  const auto all = sla.Snapshot(at);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_DOUBLE_EQ(all[0].tokens_per_second, 60.0);
  EXPECT_EQ(all[0].requests, 64);  // the quantiles' ring is bounded: errors only by now
  EXPECT_DOUBLE_EQ(all[0].error_rate, 1.0);
  // A minute later the tokens have left the window.
  EXPECT_DOUBLE_EQ(sla.TokensPerSecond("p", "", t0 + std::chrono::seconds(62)), 0.0);
}

TEST(TenantSlaTest, PrometheusTextEscapesTenantLabels) {
  TenantSla sla;
  sla.Record(RequestTiming{"we\"ird\\t", "m", true, 0.25, 0.05, 2});
  const std::string text = sla.RenderPrometheus();
  EXPECT_NE(text.find("# TYPE pagoda_tenant_ttft_seconds summary"), std::string::npos);
  EXPECT_NE(text.find("pagoda_tenant_ttft_seconds{tenant=\"we\\\"ird\\\\t\",quantile=\"0.5\"} 0.25"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("pagoda_tenant_error_rate{tenant=\"we\\\"ird\\\\t\"} 0"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::control
