#include "gateway/cache_aware_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace pagoda::gateway {
namespace {

constexpr int kBs = 4;

std::vector<int32_t> Tokens(int n, int32_t start = 1) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Feeds `replica`'s index with the first n_blocks blocks of `t` as one root event.
void Store(KvIndex& index, const std::string& replica, const std::vector<int32_t>& t, int n_blocks) {
  std::vector<std::string> e;
  for (int i = 0; i < n_blocks; ++i) e.push_back(replica + "/" + std::string(1, static_cast<char>('a' + i)));
  index.OnStored(replica, std::nullopt, e, std::span(t).first(static_cast<size_t>(n_blocks * kBs)), kBs);
}

ReplicaView View(std::string_view id, int64_t active_blocks, int64_t active_requests = 0, bool events = true) {
  ReplicaView v;
  v.id = id;
  v.active_blocks = active_blocks;
  v.active_requests = active_requests;
  v.kv_events = events;
  return v;
}

RouteInput Input(const std::vector<int32_t>& t) {
  RouteInput in;
  in.model = "m";
  in.tokens = t;
  in.block_size = kBs;
  return in;
}

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  std::function<std::chrono::steady_clock::time_point()> Fn() {
    return [this] { return now; };
  }
};

// Dynamo's worked example (router-design docs): (prefill, decode) blocks =
// (8, 10), (5, 5), (2, 9) cost 18 / 10 / 11 and the second worker wins.
TEST(CacheAwarePolicyTest, DynamoWorkedExamplePicksTheCheapest) {
  KvIndex index;
  const auto t = Tokens(10 * kBs);  // 10 blocks; the engine may reuse 9
  Store(index, "w1", t, 2);
  Store(index, "w2", t, 5);
  Store(index, "w3", t, 8);
  CacheAwarePolicy policy(&index);
  std::vector<ReplicaView> c = {View("w1", 10), View("w2", 5), View("w3", 9)};
  RouteChoice r = policy.Pick(Input(t), c);
  EXPECT_EQ(r.index, 1u);
  EXPECT_EQ(r.predicted_cached_tokens, 5 * kBs);
  // More decode load on w2 (cost 14) hands it to w3 (11).
  c[1].active_blocks = 9;
  r = policy.Pick(Input(t), c);
  EXPECT_EQ(r.index, 2u);
  EXPECT_EQ(r.predicted_cached_tokens, 8 * kBs);
}

// A prefix held only on a replica's disk tier saves less prefill than one in
// memory (credit 0.9 a block) but more than nothing: memory beats disk at
// equal load, disk beats a cold replica, and a little load tips disk over.
TEST(CacheAwarePolicyTest, LowerTierHitsAreCreditedAtTheirCost) {
  KvIndex index;
  const auto t = Tokens(10 * kBs + 1);  // 10 usable blocks
  Store(index, "mem", t, 10);
  Store(index, "disk", t, 10);
  std::vector<std::string> e;
  for (int i = 0; i < 10; ++i) e.push_back("disk/" + std::string(1, static_cast<char>('a' + i)));
  index.OnStored("disk", std::nullopt, e, std::span(t).first(10 * kBs), kBs, 0, "DISK");
  index.OnRemoved("disk", e, "CPU");
  CacheAwarePolicy policy(&index);
  std::vector<ReplicaView> c = {View("cold", 0), View("disk", 0), View("mem", 0)};
  RouteChoice r = policy.Pick(Input(t), c);
  EXPECT_EQ(r.index, 2u);  // 0.25 blocks to compute vs 1.25 on disk vs 10.25 cold
  EXPECT_EQ(r.predicted_cached_tokens, 10 * kBs);
  c[2].active_blocks = 2;  // mem: 2.25 > disk 1.25
  r = policy.Pick(Input(t), c);
  EXPECT_EQ(r.index, 1u);
  EXPECT_EQ(r.predicted_cached_tokens, 10 * kBs);  // restored blocks count as cached
  c[1].active_blocks = 10;  // disk 11.25 and mem 20.25 > cold 10.25
  c[2].active_blocks = 20;
  EXPECT_EQ(policy.Pick(Input(t), c).index, 0u);
}

TEST(CacheAwarePolicyTest, WeightScalesThePrefillTerm) {
  KvIndex index;
  const auto t = Tokens(10 * kBs);
  Store(index, "w1", t, 2);
  Store(index, "w2", t, 5);
  CacheAwarePolicy policy(&index);
  std::vector<ReplicaView> c = {View("w1", 0), View("w2", 2)};
  EXPECT_EQ(policy.Pick(Input(t), c).index, 1u);  // 8 vs 5 + 2
  c[1].weight = 2.0;                               // 8 vs 10 + 2
  EXPECT_EQ(policy.Pick(Input(t), c).index, 0u);
}

// A session's home replica runs another long request: with Dynamo's weight
// its held blocks outweigh the few new blocks to compute and the session
// moves to an idle replica (a full prefill); a decode_block_weight of 0.1
// keeps it home.
TEST(CacheAwarePolicyTest, DecodeBlockWeightScalesTheLoadTerm) {
  KvIndex index;
  const auto t = Tokens(40 * kBs);
  Store(index, "home", t, 38);
  std::vector<ReplicaView> c = {View("home", 300), View("idle", 0)};
  CacheAwarePolicy dynamo(&index);
  EXPECT_EQ(dynamo.Pick(Input(t), c).index, 1u);  // 2 + 300 vs 40
  CacheAwareOptions light;
  light.decode_block_weight = 0.1;
  CacheAwarePolicy local(&index, light);
  const RouteChoice r = local.Pick(Input(t), c);  // 2 + 30 vs 40
  EXPECT_EQ(r.index, 0u);
  EXPECT_EQ(r.predicted_cached_tokens, 38 * kBs);
}

TEST(CacheAwarePolicyTest, PredictionNeverCoversTheLastToken) {
  KvIndex index;
  const auto t = Tokens(3 * kBs);
  Store(index, "w1", t, 3);  // the whole prompt is cached
  CacheAwarePolicy policy(&index);
  const std::vector<ReplicaView> c = {View("w1", 0)};
  EXPECT_EQ(policy.Pick(Input(t), c).predicted_cached_tokens, 2 * kBs);
}

TEST(CacheAwarePolicyTest, TiesGoToFewerRequestsThenAStableIdOrder) {
  CacheAwarePolicy policy(nullptr);
  const auto t = Tokens(4 * kBs);
  std::vector<ReplicaView> c = {View("a", 3, 2), View("b", 3, 1), View("c", 3, 2)};
  EXPECT_EQ(c[policy.Pick(Input(t), c).index].id, "b");
  c[1].active_requests = 2;
  const std::string_view first = c[policy.Pick(Input(t), c).index].id;
  std::reverse(c.begin(), c.end());
  EXPECT_EQ(c[policy.Pick(Input(t), c).index].id, first);  // not the candidate order
}

TEST(CacheAwarePolicyTest, TiesSpreadNewPrefixesOverIdleReplicas) {
  CacheAwarePolicy policy(nullptr);
  const std::vector<ReplicaView> c = {View("a", 0), View("b", 0), View("c", 0), View("d", 0)};
  std::set<size_t> chosen;
  for (int p = 0; p < 32; ++p) {
    std::vector<int32_t> t(2 * kBs, 7);
    t.back() = 1000 + p;  // distinct last blocks, a shared first one
    const size_t i = policy.Pick(Input(t), c).index;
    EXPECT_EQ(policy.Pick(Input(t), c).index, i);  // one prompt, one choice
    chosen.insert(i);
  }
  EXPECT_GE(chosen.size(), 3u);
}

TEST(CacheAwarePolicyTest, ApproximateTreeKeepsSessionsOnTheirReplica) {
  CacheAwarePolicy policy(nullptr);
  const auto t = Tokens(20 * kBs);
  const std::vector<ReplicaView> c = {View("a", 0, 0, false), View("b", 0, 0, false)};
  const RouteChoice first = policy.Pick(Input(t), c);
  policy.OnDispatched(Input(t), c[first.index]);
  EXPECT_EQ(first.predicted_cached_tokens, 0);
  // The next turn extends the prompt; its replica now runs a request.
  auto next = t;
  for (int i = 0; i < 3 * kBs; ++i) next.push_back(5000 + i);
  std::vector<ReplicaView> c2 = c;
  c2[first.index].active_blocks = 6;
  c2[first.index].active_requests = 1;
  const RouteChoice second = policy.Pick(Input(next), c2);
  EXPECT_EQ(second.index, first.index);
  EXPECT_EQ(second.predicted_cached_tokens, 20 * kBs);
}

TEST(CacheAwarePolicyTest, UntokenizedRequestsMatchOnText) {
  CacheAwarePolicy policy(nullptr);
  const std::vector<ReplicaView> c = {View("a", 0, 0, false), View("b", 0, 0, false)};
  RouteInput in;
  in.block_size = kBs;
  const std::string system(400, 's');
  const std::string first_text = system + " first question";
  in.prompt_text = first_text;
  const RouteChoice first = policy.Pick(in, c);
  policy.OnDispatched(in, c[first.index]);
  std::vector<ReplicaView> c2 = c;
  c2[first.index].active_blocks = 5;
  const std::string second = system + " another question";
  in.prompt_text = second;
  const RouteChoice r = policy.Pick(in, c2);
  EXPECT_EQ(r.index, first.index);
  EXPECT_EQ(r.predicted_cached_tokens, (400 / (4 * kBs)) * kBs);
}

// sglang#32195: shedding load must not throw away locality.
TEST(CacheAwarePolicyTest, ImbalanceShedsLoadButKeepsTheLongestPrefix) {
  KvIndex index;
  const auto t = Tokens(12 * kBs);
  Store(index, "hot", t, 10);
  Store(index, "warm", t, 6);
  CacheAwareOptions o;
  o.balance_abs_threshold = 4;
  o.balance_rel_threshold = 1.5;
  CacheAwarePolicy policy(&index, o);
  // "hot" holds the most but runs 20 requests; "idle" the least loaded has nothing.
  std::vector<ReplicaView> c = {View("hot", 1, 20), View("warm", 30, 3), View("idle", 0, 0), View("busy", 0, 5)};
  RouteChoice r = policy.Pick(Input(t), c);
  EXPECT_EQ(c[r.index].id, "warm");  // within min + 4 requests, longest prefix (cost would say idle)
  EXPECT_EQ(r.predicted_cached_tokens, 6 * kBs);
  // Balanced again (max 6 <= 1.5 x min 4): the cost decides, and "hot" wins on locality.
  c = {View("hot", 1, 6), View("warm", 30, 4), View("idle", 0, 4)};
  r = policy.Pick(Input(t), c);
  EXPECT_EQ(c[r.index].id, "hot");
}

TEST(CacheAwarePolicyTest, PendingPrefixHoldsABurstTogetherUntilItExpires) {
  KvIndex index;  // no events arrive in this test
  FakeClock clock;
  CacheAwareOptions o;
  o.pending_ttl = std::chrono::milliseconds(10000);
  o.clock = clock.Fn();
  CacheAwarePolicy policy(&index, o);
  const auto t = Tokens(16 * kBs);
  std::vector<ReplicaView> c = {View("a", 0), View("b", 0)};
  const RouteChoice first = policy.Pick(Input(t), c);
  policy.OnDispatched(Input(t), c[first.index]);
  c[first.index].active_blocks = 8;  // the first request of the burst runs there
  clock.now += std::chrono::milliseconds(50);
  const RouteChoice second = policy.Pick(Input(t), c);
  EXPECT_EQ(second.index, first.index);
  EXPECT_EQ(second.predicted_cached_tokens, 15 * kBs);
  // No event confirmed it within the TTL: the pending entry is gone.
  clock.now += std::chrono::milliseconds(10000);
  const RouteChoice late = policy.Pick(Input(t), c);
  EXPECT_NE(late.index, first.index);
  EXPECT_EQ(late.predicted_cached_tokens, 0);
}

TEST(CacheAwarePolicyTest, EventsConfirmWhatPendingPredicted) {
  KvIndex index;
  FakeClock clock;
  CacheAwareOptions o;
  o.clock = clock.Fn();
  CacheAwarePolicy policy(&index, o);
  const auto t = Tokens(8 * kBs);
  std::vector<ReplicaView> c = {View("a", 0), View("b", 0)};
  const RouteChoice first = policy.Pick(Input(t), c);
  policy.OnDispatched(Input(t), c[first.index]);
  Store(index, std::string(c[first.index].id), t, 8);
  clock.now += std::chrono::hours(1);
  c[first.index].active_blocks = 4;
  EXPECT_EQ(policy.Pick(Input(t), c).index, first.index);
}

TEST(CacheAwarePolicyTest, RemovedReplicaLosesItsApproximateEntries) {
  CacheAwarePolicy policy(nullptr);
  const auto t = Tokens(8 * kBs);
  const std::vector<ReplicaView> c = {View("a", 0, 0, false)};
  policy.OnDispatched(Input(t), c[0]);
  EXPECT_EQ(policy.Pick(Input(t), c).predicted_cached_tokens, 7 * kBs);
  policy.RemoveReplica("a");
  EXPECT_EQ(policy.Pick(Input(t), c).predicted_cached_tokens, 0);
}

TEST(CacheAwarePolicyTest, ConcurrentPicksDispatchesAndEvents) {
  KvIndex index;
  CacheAwarePolicy policy(&index);
  const std::vector<std::string> ids = {"e0", "e1", "t0", "t1"};
  std::atomic<bool> stop{false};
  std::thread feeder([&] {
    for (int round = 0; !stop.load(); ++round) {
      const auto t = Tokens(8 * kBs, round % 50);
      Store(index, ids[static_cast<size_t>(round % 2)], t, 8);
      if (round % 7 == 0) index.OnCleared(ids[static_cast<size_t>(round % 2)]);
    }
  });
  std::vector<std::thread> routers;
  for (int w = 0; w < 3; ++w) {
    routers.emplace_back([&, w] {
      std::vector<ReplicaView> c = {View(ids[0], 0), View(ids[1], 0), View(ids[2], 0, 0, false),
                                    View(ids[3], 0, 0, false)};
      for (int i = 0; i < 2000; ++i) {
        const auto t = Tokens(8 * kBs, (i + w) % 50);
        const RouteChoice r = policy.Pick(Input(t), c);
        ASSERT_LT(r.index, c.size());
        ASSERT_LE(r.predicted_cached_tokens, 7 * kBs);
        policy.OnDispatched(Input(t), c[r.index]);
        c[r.index].active_blocks = (c[r.index].active_blocks + 1) % 5;
      }
    });
  }
  for (auto& th : routers) th.join();
  stop = true;
  feeder.join();
  EXPECT_GT(policy.tree().size(), 0u);
}

}  // namespace
}  // namespace pagoda::gateway
