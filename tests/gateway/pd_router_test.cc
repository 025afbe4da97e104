// Prefill/decode routing decisions over a real RoutingTable: prefill-role
// replicas never take a client's request, the threshold on the uncached
// prompt (after what the cache_aware policy predicts the decode replica
// holds), and the prefill replica's choice (least loaded, never the decode
// replica, skipping ineligible and excluded ones, pools first).
#include "gateway/pd_router.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "gateway/router.h"

namespace pagoda::gateway {
namespace {

const char* kConfig = R"(
[[models]]
name = "m"
policy = "round_robin"
pd_threshold_tokens = 100
[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1001"
name = "p1"
role = "prefill"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1002"
name = "p2"
role = "prefill"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1003"
name = "d1"
role = "decode"
kv_transfer = "127.0.0.1:7003"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1004"
name = "b1"
kv_transfer = "127.0.0.1:7004"
[[models.deployments.replicas]]
url = "http://127.0.0.1:1005"
name = "b2"

[[models]]
name = "plain"
[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:2001"
name = "x1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:2002"
name = "x2"
role = "decode"

[[models]]
name = "cached"
block_size = 4
pd_threshold_tokens = 10
[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:3001"
name = "cp"
role = "prefill"
[[models.deployments.replicas]]
url = "http://127.0.0.1:3002"
name = "cd1"
role = "decode"
kv_transfer = "127.0.0.1:7101"
kv_events = "tcp://127.0.0.1:5557"
[[models.deployments.replicas]]
url = "http://127.0.0.1:3003"
name = "cd2"
role = "decode"
kv_transfer = "127.0.0.1:7102"
kv_events = "tcp://127.0.0.1:5558"
)";

class PdRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = ParseGatewayConfig(kConfig);
    ASSERT_TRUE(c.ok()) << c.status().message();
    auto t = RoutingTable::Build(*c, nullptr, [](const std::string&) { return std::nullopt; });
    ASSERT_TRUE(t.ok()) << t.status().message();
    table_ = *t;
    for (const auto& r : table_->AllReplicas()) by_id_[r->id()] = r;
  }
  const Deployment& Dep(const std::string& model) { return table_->FindModel(model)->deployments[0]; }
  const Replica& R(const std::string& id) { return *by_id_.at(id); }
  void Load(const std::string& id, int64_t requests) { by_id_.at(id)->state().active_requests = requests; }
  void Down(const std::string& id) { by_id_.at(id)->state().OnProbe(false, now_); }
  std::string Prefill(const std::string& decode, const std::set<std::string>& exclude = {},
                      WorkloadClass c = WorkloadClass::kInteractive) {
    auto r = PickPrefillReplica(Dep("m"), R(decode), exclude, c, now_);
    return r ? r->id() : "none";
  }

  std::shared_ptr<RoutingTable> table_;
  std::map<std::string, std::shared_ptr<const Replica>> by_id_;
  std::chrono::steady_clock::time_point now_ = std::chrono::steady_clock::now();
};

TEST_F(PdRouterTest, PrefillReplicasNeverTakeAClientRequest) {
  std::map<std::string, int> seen;
  RouteRequest req;
  req.model = "m";
  for (int i = 0; i < 30; ++i) {
    auto d = Route(*table_, req, now_);
    ASSERT_TRUE(d.ok());
    ++seen[d->replica->id()];
  }
  EXPECT_EQ(seen.count("p1"), 0u);
  EXPECT_EQ(seen.count("p2"), 0u);
  EXPECT_EQ(seen["d1"], 10);
  EXPECT_EQ(seen["b1"], 10);
  EXPECT_EQ(seen["b2"], 10);
  // Nor a retry once every decode-capable replica was tried: 503, not a prefill replica.
  req.exclude = {"d1", "b1", "b2"};
  auto d = Route(*table_, req, now_);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().status, 503);
}

TEST_F(PdRouterTest, DisaggregatesOnlyAboveTheThresholdAndWithATransferAddress) {
  EXPECT_EQ(DecidePd(Dep("m"), R("d1"), 100, 100), PdDecision::kColocatedBelowThreshold);
  EXPECT_EQ(DecidePd(Dep("m"), R("d1"), 101, 100), PdDecision::kDisaggregate);
  EXPECT_EQ(DecidePd(Dep("m"), R("b1"), 5000, 100), PdDecision::kDisaggregate);
  // A both replica without kv_transfer can only prefill for itself.
  EXPECT_EQ(DecidePd(Dep("m"), R("b2"), 5000, 100), PdDecision::kColocatedNoKvTransfer);
  // A deployment without prefill replicas routes as it always did.
  EXPECT_FALSE(HasPrefillReplicas(Dep("plain")));
  EXPECT_EQ(DecidePd(Dep("plain"), R("x2"), 5000, 100), PdDecision::kNotApplicable);
  EXPECT_TRUE(HasPrefillReplicas(Dep("m")));
}

TEST_F(PdRouterTest, UncachedPromptIsTokensLessPredictedCachedElseBodyBytesOverFour) {
  EXPECT_EQ(UncachedPromptTokens(true, 300, 99999, 64), 236);
  EXPECT_EQ(UncachedPromptTokens(false, 0, 1000, 0), 250);
  EXPECT_EQ(UncachedPromptTokens(false, 0, 1000, 200), 50);
  EXPECT_EQ(UncachedPromptTokens(true, 10, 0, 64), 0);  // never negative
}

TEST_F(PdRouterTest, PrefillGoesToTheLeastLoadedPrefillCapableReplicaButNeverTheDecodeOne) {
  Load("p1", 3);
  Load("p2", 1);
  Load("b1", 2);
  Load("b2", 2);
  EXPECT_EQ(Prefill("d1"), "p2");
  Load("p2", 5);
  EXPECT_EQ(Prefill("d1"), "b1");  // both replicas prefill too (a tie: the first)
  EXPECT_EQ(Prefill("b1"), "b2");  // ... but never for themselves
  // The retry skips the replica that failed; decode-role replicas never prefill.
  EXPECT_EQ(Prefill("b1", {"b2"}), "p1");
  EXPECT_EQ(Prefill("b1", {"b2", "p1", "p2"}), "none");
  Down("b2");
  EXPECT_EQ(Prefill("b1"), "p1");
}

TEST_F(PdRouterTest, PrefillPrefersReplicasWhosePoolTakesTheClass) {
  by_id_.at("p2")->state().pool = Pool::kBatch;
  Load("p1", 4);
  EXPECT_EQ(Prefill("b1", {"b2"}), "p1");                        // interactive: not the batch pool
  EXPECT_EQ(Prefill("b1", {"b2"}, WorkloadClass::kBatch), "p2");  // batch: the batch pool
  Down("p1");
  EXPECT_EQ(Prefill("b1", {"b2"}), "p2");  // none in its pool: any
}

TEST_F(PdRouterTest, CacheAwareDecodeReplicaHoldingThePrefixMayNeedNoPrefillLeg) {
  // cd2 holds the first 5 blocks (20 tokens) of a 32-token prompt.
  std::vector<int32_t> tokens(32);
  std::iota(tokens.begin(), tokens.end(), 1);
  std::vector<std::string> hashes = {"a", "b", "c", "d", "e"};
  table_->FindModel("cached")->kv_index->OnStored("cd2", std::nullopt, hashes, std::span(tokens).first(20), 4);
  RouteRequest req;
  req.model = "cached";
  req.tokens = tokens;
  req.prompt_tokens = 32;
  auto d = Route(*table_, req, now_);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->replica->id(), "cd2");
  EXPECT_EQ(d->predicted_cached_tokens, 20);
  const int64_t uncached = UncachedPromptTokens(true, tokens.size(), 0, d->predicted_cached_tokens);
  EXPECT_EQ(uncached, 12);
  EXPECT_EQ(DecidePd(Dep("cached"), *d->replica, uncached, 10), PdDecision::kDisaggregate);
  EXPECT_EQ(DecidePd(Dep("cached"), *d->replica, uncached, 12), PdDecision::kColocatedBelowThreshold);
  auto p = PickPrefillReplica(Dep("cached"), *d->replica, {}, WorkloadClass::kInteractive, now_);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->id(), "cp");
}

}  // namespace
}  // namespace pagoda::gateway
