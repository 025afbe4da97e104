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
