#include "gateway/capacity_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <nlohmann/json.hpp>

namespace pagoda::gateway {
namespace {

using std::chrono::system_clock;
using json = nlohmann::json;

// 2024-05-06 (a Monday) at hh:mm UTC.
system_clock::time_point Monday(int h, int m) {
  using namespace std::chrono;
  return sys_days{year{2024} / May / day{6}} + hours{h} + minutes{m};
}

const char* kConfig = R"(
[[models]]
name = "m"
[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1001"
name = "a"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1002"
name = "b"
[models.deployments.schedule]
time_zone = "UTC"
[[models.deployments.schedule.windows]]
start = "08:00"
end = "20:00"
pool = "realtime"
[[models.deployments.schedule.windows]]
start = "20:00"
end = "08:00"
pool = "batch"
replicas = ["b"]
[[models.deployments]]
version = "v2"
[[models.deployments.replicas]]
url = "http://127.0.0.1:2001"
name = "c"
)";

class CapacitySchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ParseGatewayConfig(kConfig);
    ASSERT_TRUE(c.ok()) << c.status().message();
    auto t = RoutingTable::Build(*c, nullptr, ProcessEnv());
    ASSERT_TRUE(t.ok()) << t.status().message();
    table_ = *t;
    now_ = Monday(12, 0);
    scheduler_ = std::make_unique<CapacityScheduler>([this] { return now_.load(); });
    scheduler_->Adopt(table_);
  }
  std::string PoolOf(const std::string& id) const {
    for (const auto& r : table_->AllReplicas()) {
      if (r->id() == id) return PoolName(r->state().pool.load());
    }
    return "?";
  }

  std::shared_ptr<RoutingTable> table_;
  std::atomic<system_clock::time_point> now_;
  std::unique_ptr<CapacityScheduler> scheduler_;
};

TEST_F(CapacitySchedulerTest, AdoptAppliesTheConfigsScheduleAtOnce) {
  EXPECT_EQ(PoolOf("a"), "realtime");
  EXPECT_EQ(PoolOf("b"), "realtime");
  EXPECT_EQ(PoolOf("c"), "shared");  // v2 has no schedule
}

TEST_F(CapacitySchedulerTest, ApplyFollowsTheClock) {
  now_ = Monday(20, 0);
  EXPECT_EQ(PoolOf("b"), "realtime");  // nothing moves until applied
  scheduler_->Apply();
  EXPECT_EQ(PoolOf("a"), "shared");
  EXPECT_EQ(PoolOf("b"), "batch");
  now_ = Monday(8, 0) + std::chrono::hours(24);
  scheduler_->Apply();
  EXPECT_EQ(PoolOf("a"), "realtime");
  EXPECT_EQ(PoolOf("b"), "realtime");
}

TEST_F(CapacitySchedulerTest, TickerAppliesWithoutBeingAsked) {
  scheduler_->StartTicking(std::chrono::milliseconds(10));
  now_ = Monday(21, 0);
  for (int i = 0; i < 500 && PoolOf("b") != "batch"; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(PoolOf("b"), "batch");
  scheduler_->StopTicking();
}

TEST_F(CapacitySchedulerTest, AdminChangesLastUntilTheNextAdopt) {
  auto s = ScheduleFromJson({{"time_zone", "UTC"},
                             {"windows", {{{"start", "00:00"}, {"end", "24:00"}, {"pool", "batch"}}}}});
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(scheduler_->Set("m", "v2", *s).ok());
  EXPECT_EQ(PoolOf("c"), "batch");
  ASSERT_TRUE(scheduler_->Remove("m", "v1").ok());
  EXPECT_EQ(PoolOf("a"), "shared");
  EXPECT_EQ(PoolOf("b"), "shared");
  const json all = scheduler_->ToJson();
  ASSERT_EQ(all["schedules"].size(), 2u);
  EXPECT_TRUE(all["schedules"][0]["schedule"].is_null());
  EXPECT_EQ(all["schedules"][1]["source"], "admin");
  EXPECT_EQ(all["now"], "2024-05-06T12:00:00Z");
  // A reload's Adopt restores the config's schedules.
  scheduler_->Adopt(table_);
  EXPECT_EQ(PoolOf("a"), "realtime");
  EXPECT_EQ(PoolOf("c"), "shared");
}

TEST_F(CapacitySchedulerTest, RefusesUnknownDeploymentsAndSchedulesThatDoNotBind) {
  auto s = ScheduleFromJson({{"time_zone", "UTC"},
                             {"windows", {{{"start", "00:00"}, {"end", "24:00"}, {"pool", "batch"}, {"replicas", 2}}}}});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(scheduler_->Set("m", "v9", *s).code(), StatusCode::kNotFound);
  EXPECT_EQ(scheduler_->Set("nope", "v1", *s).code(), StatusCode::kNotFound);
  const Status st = scheduler_->Set("m", "v2", *s);  // v2 has one replica
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("the deployment has 1"), std::string::npos) << st.message();
  EXPECT_EQ(scheduler_->Remove("m", "v2").code(), StatusCode::kNotFound);  // no schedule
  EXPECT_EQ(PoolOf("c"), "shared");
}

TEST_F(CapacitySchedulerTest, EntryShowsPoolsAndNextChanges) {
  const auto e = scheduler_->DeploymentJson("m", "v1");
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["source"], "config");
  EXPECT_EQ((*e)["schedule"]["time_zone"], "UTC");
  const json& a = (*e)["replicas"][0];
  EXPECT_EQ(a["id"], "a");
  EXPECT_EQ(a["pool"], "realtime");
  EXPECT_EQ(a["next_pool"], "shared");
  EXPECT_EQ(a["next_change"], "2024-05-06T20:00:00Z");
  EXPECT_EQ((*e)["replicas"][1]["next_pool"], "batch");
  const auto v2 = scheduler_->DeploymentJson("m", "v2");
  ASSERT_TRUE(v2);
  EXPECT_TRUE((*v2)["replicas"][0]["next_change"].is_null());
  EXPECT_FALSE(scheduler_->DeploymentJson("m", "v3"));
}

}  // namespace
}  // namespace pagoda::gateway
