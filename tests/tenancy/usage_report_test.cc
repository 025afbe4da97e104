#include "tenancy/usage_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::tenancy {
namespace {

UsageRow Row(std::string tenant, std::string model, int64_t day, int64_t prompt, int64_t cached, int64_t completion) {
  UsageRow r;
  r.tenant_id = std::move(tenant);
  r.model = std::move(model);
  r.day_ms = day;
  r.requests = 1;
  r.prompt_tokens = prompt;
  r.cached_tokens = cached;
  r.completion_tokens = completion;
  return r;
}

TEST(UsageReportTest, PricesUncachedCachedAndCompletionTokensSeparately) {
  const Price p{"m", 2.0, 0.5, 8.0, 3.0};
  UsageRow r = Row("t", "m", 0, 1'000'000, 400'000, 250'000);
  EXPECT_DOUBLE_EQ(RowCost(r, p), 0.6 * 2.0 + 0.4 * 0.5 + 0.25 * 8.0);
  r.replica_hours = 2;
  EXPECT_DOUBLE_EQ(RowCost(r, p), 0.6 * 2.0 + 0.4 * 0.5 + 0.25 * 8.0 + 6.0);
}

TEST(UsageReportTest, PricesPerModelThenSumsIntoTheAskedGroups) {
  UsageQuery q;  // by tenant only
  std::vector<UsageRow> rows = {Row("a", "m1", 0, 1'000'000, 0, 0), Row("a", "m2", 0, 1'000'000, 0, 0),
                                Row("b", "m3", 0, 10, 0, 0)};
  std::vector<UsageRow> replicas = {Row("a", "m1", 0, 0, 0, 0)};
  replicas[0].requests = 0;
  replicas[0].replica_hours = 1;
  const UsageReport rep = MakeUsageReport(q, rows, replicas, {{"m1", 1, 0, 0, 10}, {"m2", 3, 0, 0, 0}});
  ASSERT_EQ(rep.rows.size(), 2u);
  EXPECT_EQ(rep.rows[0].tenant_id, "a");
  EXPECT_EQ(rep.rows[0].model, "");
  EXPECT_DOUBLE_EQ(rep.rows[0].cost, 1 + 3 + 10);
  EXPECT_EQ(rep.rows[0].requests, 2);
  EXPECT_DOUBLE_EQ(rep.rows[1].cost, 0);
  EXPECT_EQ(rep.unpriced_models, std::vector<std::string>{"m3"});
  EXPECT_DOUBLE_EQ(rep.total.cost, 14);
  EXPECT_EQ(rep.total.prompt_tokens, 2'000'010);
}

TEST(UsageReportTest, PricesBatchTierTokensWithTheBatchFactor) {
  Price p{"m", 2.0, 0.5, 8.0, 4.0};
  p.batch_factor = 0.25;
  UsageRow r = Row("t", "m", 0, 2'000'000, 500'000, 1'000'000);
  r.replica_hours = 3;  // replica-hours are not discounted
  EXPECT_DOUBLE_EQ(RowCost(r, p), 1.5 * 2.0 + 0.5 * 0.5 + 1.0 * 8.0 + 12.0);
  r.service_tier = "batch";
  EXPECT_DOUBLE_EQ(RowCost(r, p), 14.8125);  // (3 + 0.25 + 8) * 0.25 + 12
  r.service_tier = "realtime";
  EXPECT_DOUBLE_EQ(RowCost(r, p), 23.25);
}

TEST(UsageReportTest, SumsTiersUnlessGroupedByTierAndKeepsTheOutputStable) {
  Price p{"m", 0.15, 0.075, 0.6, 0};
  p.batch_factor = 0.5;
  UsageRow interactive = Row("t", "m", 0, 1'234'567, 234'567, 345'678);
  interactive.service_tier = "interactive";
  UsageRow batch = Row("t", "m", 0, 7'654'321, 654'321, 876'543);
  batch.service_tier = "batch";
  // By hand: (1e6 * 0.15 + 234567 * 0.075 + 345678 * 0.6) / 1e6 = 0.374999325, and
  // (7e6 * 0.15 + 654321 * 0.075 + 876543 * 0.6) / 1e6 * 0.5 = 0.8124999375.
  UsageQuery q;
  const UsageReport rep = MakeUsageReport(q, {interactive, batch}, {}, {p});
  ASSERT_EQ(rep.rows.size(), 1u);
  EXPECT_NEAR(rep.rows[0].cost, 1.1874992625, 1e-12);
  EXPECT_EQ(rep.rows[0].service_tier, "");
  EXPECT_EQ(rep.rows[0].prompt_tokens, 8'888'888);
  const nlohmann::json j = UsageReportJson(rep);
  EXPECT_FALSE(j["rows"][0].contains("service_tier"));
  EXPECT_EQ(UsageReportCsv(rep).substr(0, UsageReportCsv(rep).find('\r')),
            "tenant_id,requests,errors,prompt_tokens,cached_tokens,completion_tokens,total_ms_sum,ttft_ms_sum,"
            "replica_hours,cost");

  q.by_tier = true;
  const UsageReport tiers = MakeUsageReport(q, {interactive, batch}, {}, {p});
  ASSERT_EQ(tiers.rows.size(), 2u);
  EXPECT_EQ(tiers.rows[0].service_tier, "batch");
  EXPECT_NEAR(tiers.rows[0].cost, 0.8124999375, 1e-12);
  EXPECT_EQ(tiers.rows[1].service_tier, "interactive");
  EXPECT_NEAR(tiers.rows[1].cost, 0.374999325, 1e-12);
  EXPECT_NEAR(tiers.total.cost, 1.1874992625, 1e-12);
  EXPECT_EQ(UsageReportJson(tiers)["rows"][0]["service_tier"], "batch");
  const std::string csv = UsageReportCsv(tiers);
  EXPECT_EQ(csv.substr(0, csv.find(',', csv.find(',') + 1)), "tenant_id,service_tier");
  EXPECT_NE(csv.find("\r\nt,batch,1,"), std::string::npos) << csv;
}

TEST(UsageReportTest, QuotesCsvFieldsPerRfc4180) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField("cr\r"), "\"cr\r\"");
  EXPECT_EQ(CsvField(""), "");
}

TEST(UsageReportTest, ExportsCsvAndJsonWithTheGroupColumns) {
  UsageQuery q;
  q.by_model = true;
  q.by_day = true;
  const int64_t day = 1'750'000'000'000 / kDayMs * kDayMs;
  const UsageReport rep =
      MakeUsageReport(q, {Row("t,1", "org/model \"x\"", day, 2'000'000, 1'000'000, 1'000'000)}, {},
                      {{"org/model \"x\"", 1, 0.5, 2, 0}});
  EXPECT_EQ(UsageReportCsv(rep),
            "tenant_id,model,day,requests,errors,prompt_tokens,cached_tokens,completion_tokens,total_ms_sum,"
            "ttft_ms_sum,replica_hours,cost\r\n"
            "\"t,1\",\"org/model \"\"x\"\"\",2025-06-15,1,0,2000000,1000000,1000000,0,0,0.000000,3.500000\r\n");
  const nlohmann::json j = UsageReportJson(rep);
  EXPECT_EQ(j["rows"][0]["tenant_id"], "t,1");
  EXPECT_EQ(j["rows"][0]["day"], "2025-06-15");
  EXPECT_FALSE(j["rows"][0].contains("key_id"));
  EXPECT_DOUBLE_EQ(j["total"]["cost"].get<double>(), 3.5);
  EXPECT_TRUE(j["unpriced_models"].empty());
}

}  // namespace
}  // namespace pagoda::tenancy
