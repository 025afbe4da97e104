#include "server/console_stats.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

TEST(ConsoleStatsTest, EngineFiguresAndRawHistograms) {
  EngineStats s;
  s.requests_running = 2;
  s.requests_waiting = 5;
  s.kv_usage = 0.25;
  s.kv_capacity_tokens = 4096;
  s.prefix_cache_queries = 100;
  s.prefix_cache_hits = 60;
  s.requests_failed_total = 1;
  s.requests_rejected_total = 3;
  s.kv_offload_tiers.push_back({.name = "disk", .blocks = 7, .restored_tokens = 48});
  s.time_to_first_token.Observe(0.003);
  s.time_to_first_token.Observe(0.2);
  const nlohmann::json j = nlohmann::json::parse(ConsoleStatsJson(s, "m", 1234));
  EXPECT_EQ(j["kind"], "serve");
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["time_ms"], 1234);
  const nlohmann::json& e = j["engine"];
  EXPECT_EQ(e["requests_running"], 2);
  EXPECT_EQ(e["requests_waiting"], 5);
  EXPECT_EQ(e["kv_usage"], 0.25);
  EXPECT_EQ(e["kv_capacity_tokens"], 4096);
  EXPECT_EQ(e["prefix_cache_queries"], 100);
  EXPECT_EQ(e["prefix_cache_hits"], 60);
  EXPECT_EQ(e["requests_failed"], 1);
  EXPECT_EQ(e["requests_rejected"], 3);
  ASSERT_EQ(e["tiers"].size(), 1u);
  EXPECT_EQ(e["tiers"][0]["name"], "disk");
  EXPECT_EQ(e["tiers"][0]["hit_tokens"], 48);
  const nlohmann::json& ttft = e["ttft_seconds"];
  EXPECT_EQ(ttft["count"], 2);
  EXPECT_EQ(ttft["bounds"].size() + 1, ttft["counts"].size());
  int64_t total = 0;
  for (const auto& c : ttft["counts"]) total += c.get<int64_t>();
  EXPECT_EQ(total, 2);  // per bucket, not cumulative
  for (const char* h : {"itl_seconds", "e2e_seconds", "queue_seconds"}) EXPECT_TRUE(e[h].contains("bounds")) << h;
}

}  // namespace
}  // namespace pagoda::server
