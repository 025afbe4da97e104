#include "gateway/router.h"

#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

namespace pagoda::gateway {
namespace {

const char* kConfig = R"(
[gateway]
zone = "eu"
load_threshold_requests = 2

[[models]]
name = "m"
policy = "least_loaded"
current_version = "v1"
[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1001"
name = "eu1"
zone = "eu"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1002"
name = "eu2"
zone = "eu"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1003"
name = "us1"
zone = "us"
[[models.deployments]]
version = "v2"
[[models.deployments.replicas]]
url = "http://127.0.0.1:2001"
name = "v2a"
zone = "eu"

[[upstreams]]
name = "ext"
url = "http://127.0.0.1:3000/v1"
api_key_env = "EXT_KEY"

[[aliases]]
name = "private"
model = "m"
self_hosted_only = true

[[aliases]]
name = "chat"
model = "m@v1"
fallback = "ext"
)";

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ParseGatewayConfig(kConfig);
    ASSERT_TRUE(c.ok()) << c.status().message();
    auto t = RoutingTable::Build(*c, nullptr, [](const std::string& n) -> std::optional<std::string> {
      if (n == "EXT_KEY") return "k";
      return std::nullopt;
    });
    ASSERT_TRUE(t.ok()) << t.status().message();
    table_ = *t;
    for (const auto& r : table_->AllReplicas()) by_id_[r->id()] = r;
  }
  std::string RouteTo(std::string_view model, std::string_view zone = "eu") {
    RouteRequest req;
    req.model = model;
    req.zone = zone;
    auto d = Route(*table_, req, now_);
    if (!d.ok()) return "error " + std::to_string(d.error().status);
    return d->replica->id();
  }
  void Down(const std::string& id) {
    for (int i = 0; i < 3; ++i) by_id_[id]->state().OnFailure(now_);
  }
  std::shared_ptr<RoutingTable> table_;
  std::map<std::string, std::shared_ptr<const Replica>> by_id_;
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::now();
  std::vector<LoadGuard> held_;
};

TEST_F(RouterTest, UnknownModelOrVersionIs404) {
  EXPECT_EQ(RouteTo("nope"), "error 404");
  EXPECT_EQ(RouteTo("m@v9"), "error 404");
  RouteRequest req;
  req.model = "nope";
  auto d = Route(*table_, req, now_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code.value_or(""), "model_not_found");
}

TEST_F(RouterTest, PinnedVersionReachesOnlyThatVersion) {
  for (int i = 0; i < 5; ++i) EXPECT_EQ(RouteTo("m@v2"), "v2a");
  for (int i = 0; i < 5; ++i) EXPECT_NE(RouteTo("m"), "v2a");  // current is v1
}

TEST_F(RouterTest, ZoneFirstThenOtherZonesWhenLocalOnesAreDown) {
  EXPECT_EQ(RouteTo("m", "eu").substr(0, 2), "eu");
  EXPECT_EQ(RouteTo("m", "us"), "us1");
  Down("eu1");
  Down("eu2");
  EXPECT_EQ(RouteTo("m", "eu"), "us1");
  Down("us1");
  EXPECT_EQ(RouteTo("m", "eu"), "error 503");
}

TEST_F(RouterTest, LoadThresholdShedsToOtherZoneKeepingLocalityFirst) {
  // eu1 at the threshold (2): eu2 still takes eu traffic.
  held_.emplace_back(by_id_["eu1"]->shared_state(), 1);
  held_.emplace_back(by_id_["eu1"]->shared_state(), 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(RouteTo("m", "eu"), "eu2");
  held_.emplace_back(by_id_["eu2"]->shared_state(), 1);
  held_.emplace_back(by_id_["eu2"]->shared_state(), 1);
  EXPECT_EQ(RouteTo("m", "eu"), "us1");  // every eu replica past the threshold
  held_.emplace_back(by_id_["us1"]->shared_state(), 1);
  held_.emplace_back(by_id_["us1"]->shared_state(), 1);
  // Everyone saturated: back to the local zone.
  EXPECT_EQ(RouteTo("m", "eu").substr(0, 2), "eu");
  held_.clear();
  EXPECT_EQ(by_id_["eu1"]->state().active_requests.load(), 0);
}

TEST_F(RouterTest, SelfHostedOnlyAliasNeverReachesTheUpstream) {
  EXPECT_NE(RouteTo("private"), "upstream:ext");
  Down("eu1");
  Down("eu2");
  Down("us1");
  RouteRequest req;
  req.model = "private";
  auto d = Route(*table_, req, now_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().status, 503);
}

TEST_F(RouterTest, FallbackAliasReachesUpstreamOnlyWhenOwnReplicasAreDownOrSaturated) {
  for (int i = 0; i < 5; ++i) EXPECT_NE(RouteTo("chat"), "upstream:ext");
  // Saturated: every own replica past the threshold.
  for (const char* id : {"eu1", "eu2", "us1"}) {
    held_.emplace_back(by_id_[id]->shared_state(), 1);
    held_.emplace_back(by_id_[id]->shared_state(), 1);
  }
  EXPECT_EQ(RouteTo("chat"), "upstream:ext");
  EXPECT_NE(RouteTo("m"), "upstream:ext");  // the plain model never falls back
  held_.clear();
  EXPECT_NE(RouteTo("chat"), "upstream:ext");
  Down("eu1");
  Down("eu2");
  Down("us1");
  EXPECT_EQ(RouteTo("chat"), "upstream:ext");
}

TEST_F(RouterTest, ExcludedReplicasAreSkippedForRetries) {
  RouteRequest req;
  req.model = "m@v1";
  req.zone = "eu";
  req.exclude = {"eu1", "eu2"};
  auto d = Route(*table_, req, now_);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->replica->id(), "us1");
  EXPECT_EQ(d->deployment, "m@v1");
  EXPECT_EQ(d->policy, "least_loaded");
}

TEST_F(RouterTest, TrafficWeightsShiftUnpinnedTraffic) {
  ASSERT_TRUE(table_->SetTrafficWeights("m", {{"v2", 1.0}}).ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(RouteTo("m"), "v2a");
  ASSERT_TRUE(table_->SetTrafficWeights("m", {{"v1", 1.0}, {"v2", 1.0}}).ok());
  int v2 = 0;
  for (int i = 0; i < 400; ++i) v2 += RouteTo("m") == "v2a";
  EXPECT_GT(v2, 120);
  EXPECT_LT(v2, 280);
  EXPECT_FALSE(table_->SetTrafficWeights("m", {{"v7", 1.0}}).ok());
}

TEST_F(RouterTest, UnpinnedFallsBackToTheOtherTrafficCarryingVersion) {
  ASSERT_TRUE(table_->SetTrafficWeights("m", {{"v1", 1.0}, {"v2", 1.0}}).ok());
  Down("v2a");
  // v2 drawn half the time, but it has no eligible replica: v1 serves all.
  for (int i = 0; i < 40; ++i) EXPECT_NE(RouteTo("m"), "v2a");
  EXPECT_EQ(RouteTo("m@v2"), "error 503");  // pinned: never another version
  Down("eu1");
  Down("eu2");
  Down("us1");
  EXPECT_EQ(RouteTo("m"), "error 503");
}

TEST_F(RouterTest, VersionWithoutTrafficIsNeverAFallback) {
  // Only v1 carries unpinned traffic (all weights 0, v1 current).
  Down("eu1");
  Down("eu2");
  Down("us1");
  EXPECT_EQ(RouteTo("m"), "error 503");
  EXPECT_EQ(RouteTo("m@v2"), "v2a");
}

TEST_F(RouterTest, RetryAvoidsTheDeploymentThatJustFailed) {
  ASSERT_TRUE(table_->SetTrafficWeights("m", {{"v1", 1.0}, {"v2", 99.0}}).ok());
  RouteRequest req;
  req.model = "m";
  req.zone = "eu";
  req.avoid_deployment = "m@v2";
  for (int i = 0; i < 20; ++i) {
    auto d = Route(*table_, req, now_);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->deployment, "m@v1");
  }
  req.model = "m@v2";  // pinned: avoid_deployment does not apply
  auto d = Route(*table_, req, now_);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->deployment, "m@v2");
}

TEST_F(RouterTest, CurrentVersionCanBeMovedWithTheWeightsInOneCall) {
  ASSERT_TRUE(table_->SetTraffic("m", {}, "v2").ok());
  EXPECT_EQ(table_->CurrentVersion("m"), "v2");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(RouteTo("m"), "v2a");
  EXPECT_EQ(table_->RoutingJson()["models"][0]["current_version"], "v2");
  EXPECT_FALSE(table_->SetTraffic("m", {}, "v9").ok());
  EXPECT_EQ(table_->CurrentVersion("m"), "v2");
}

TEST_F(RouterTest, ReloadKeepsStateOfReplicasThatStay) {
  LoadGuard g(by_id_["eu1"]->shared_state(), 4);
  auto c = ParseGatewayConfig(kConfig);
  ASSERT_TRUE(c.ok());
  c->models[0].deployments[0].replicas.pop_back();  // us1 leaves
  auto t2 = RoutingTable::Build(*c, table_.get(), [](const std::string&) { return std::optional<std::string>("k"); });
  ASSERT_TRUE(t2.ok());
  bool found = false;
  for (const auto& r : (*t2)->AllReplicas()) {
    if (r->id() == "eu1") {
      found = true;
      EXPECT_EQ(r->state().active_requests.load(), 1);
      EXPECT_EQ(r->state().active_blocks.load(), 4);
    }
    EXPECT_NE(r->id(), "us1");
  }
  EXPECT_TRUE(found);
}

TEST_F(RouterTest, RequestsGoOnlyToReplicasWhosePoolTakesTheirClass) {
  by_id_["eu1"]->state().pool = Pool::kBatch;
  by_id_["eu2"]->state().pool = Pool::kRealtime;
  by_id_["us1"]->state().pool = Pool::kShared;
  auto route = [&](WorkloadClass c, std::string_view zone = "eu") {
    RouteRequest req;
    req.model = "m";
    req.zone = zone;
    req.workload_class = c;
    auto d = Route(*table_, req, now_);
    EXPECT_TRUE(d.ok());
    if (d.ok()) {
      EXPECT_FALSE(d->pool_fallback);
    }
    return d.ok() ? d->replica->id() : "error";
  };
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(route(WorkloadClass::kBatch), "eu1");
    EXPECT_EQ(route(WorkloadClass::kInteractive), "eu2");
    EXPECT_EQ(route(WorkloadClass::kRealtime), "eu2");
  }
  // The zone rule still applies within the pool; shared takes every class.
  EXPECT_EQ(route(WorkloadClass::kBatch, "us"), "us1");
  EXPECT_EQ(route(WorkloadClass::kRealtime, "us"), "us1");
}

TEST_F(RouterTest, NoEligibleReplicaInThePoolFallsBackToAnyAndSaysSo) {
  by_id_["eu1"]->state().pool = Pool::kBatch;
  by_id_["eu2"]->state().pool = Pool::kRealtime;
  by_id_["us1"]->state().pool = Pool::kRealtime;
  RouteRequest req;
  req.model = "m";
  req.zone = "eu";
  // Realtime whose whole pool was tried already: never failed because of a schedule.
  req.workload_class = WorkloadClass::kRealtime;
  req.exclude = {"eu2", "us1"};
  auto r = Route(*table_, req, now_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->replica->id(), "eu1");
  EXPECT_TRUE(r->pool_fallback);
  // Batch with its pool down: any eligible replica, by the usual zone rule.
  req.workload_class = WorkloadClass::kBatch;
  req.exclude.clear();
  Down("eu1");
  auto d = Route(*table_, req, now_);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->replica->id(), "eu2");
  EXPECT_TRUE(d->pool_fallback);
  // Interactive still has its pool: no fallback.
  req.workload_class = WorkloadClass::kInteractive;
  auto i = Route(*table_, req, now_);
  ASSERT_TRUE(i.ok());
  EXPECT_FALSE(i->pool_fallback);
}

TEST_F(RouterTest, ServedNamesListModelsVersionsAndAliases) {
  const auto names = ServedModelNames(*table_);
  const std::vector<std::string> want = {"m", "m@v1", "m@v2", "private", "chat"};
  EXPECT_EQ(names, want);
}

TEST_F(RouterTest, UpstreamKeyEnvMustBeSet) {
  auto c = ParseGatewayConfig(kConfig);
  ASSERT_TRUE(c.ok());
  auto t = RoutingTable::Build(*c, nullptr, [](const std::string&) { return std::optional<std::string>(); });
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("EXT_KEY"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::gateway
