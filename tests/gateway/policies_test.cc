// LeastLoaded, PowerOfTwo, RoundRobin and Session policies (one file: each is
// a few lines, and they share the candidate fixtures).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gateway/least_loaded_policy.h"
#include "gateway/power_of_two_policy.h"
#include "gateway/round_robin_policy.h"
#include "gateway/session_policy.h"

namespace pagoda::gateway {
namespace {

std::vector<ReplicaView> Views(const std::vector<int64_t>& loads, std::vector<std::string>* ids) {
  ids->clear();
  for (size_t i = 0; i < loads.size(); ++i) ids->push_back("r" + std::to_string(i));
  std::vector<ReplicaView> v;
  for (size_t i = 0; i < loads.size(); ++i) {
    ReplicaView r;
    r.id = (*ids)[i];
    r.active_requests = loads[i];
    v.push_back(r);
  }
  return v;
}

TEST(LeastLoadedPolicyTest, PicksTheLowestWeightedLoad) {
  std::vector<std::string> ids;
  auto v = Views({3, 1, 2}, &ids);
  LeastLoadedPolicy p;
  EXPECT_EQ(p.Pick({}, v).index, 1u);
  v[1].weight = 3.0;  // (1+1)*3 = 6 > (2+1)*1 = 3
  EXPECT_EQ(p.Pick({}, v).index, 2u);
  v = Views({1, 1}, &ids);
  v[0].active_blocks = 9;
  v[1].active_blocks = 2;
  EXPECT_EQ(p.Pick({}, v).index, 1u);  // blocks break the tie
  v[1].active_blocks = 9;
  EXPECT_EQ(p.Pick({}, v).index, 0u);  // then the earlier one
}

TEST(PowerOfTwoPolicyTest, NeverPicksTheMostLoadedOfThree) {
  std::vector<std::string> ids;
  auto v = Views({0, 5, 9}, &ids);
  PowerOfTwoPolicy p(42);
  std::map<size_t, int> seen;
  for (int i = 0; i < 300; ++i) ++seen[p.Pick({}, v).index];
  EXPECT_EQ(seen.count(2), 0u);   // r2 loses every pair it is in
  EXPECT_GT(seen[0], seen[1]);    // r0 wins both of its pairs
  EXPECT_GT(seen[1], 0);          // r1 wins (r1, r2)
  PowerOfTwoPolicy q(42);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(PowerOfTwoPolicy(7).Pick({}, v).index, PowerOfTwoPolicy(7).Pick({}, v).index);
}

TEST(RoundRobinPolicyTest, CyclesThroughCandidates) {
  std::vector<std::string> ids;
  auto v = Views({9, 0, 0}, &ids);
  RoundRobinPolicy p;
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(p.Pick({}, v).index, i % 3);
}

TEST(SessionPolicyTest, SameKeySameReplicaAndLeavingMovesOnlyItsOwnSessions) {
  std::vector<std::string> ids;
  auto v = Views({0, 0, 0, 0}, &ids);
  SessionPolicy p;
  std::map<std::string, std::string> home;
  for (int k = 0; k < 200; ++k) {
    RouteInput in;
    const std::string key = "session-" + std::to_string(k);
    in.session_key = key;
    const size_t a = p.Pick(in, v).index;
    EXPECT_EQ(p.Pick(in, v).index, a);
    home[key] = std::string(v[a].id);
  }
  std::map<std::string, int> per;
  for (const auto& [k, r] : home) ++per[r];
  EXPECT_EQ(per.size(), 4u);  // every replica gets sessions
  // r2 leaves: only its sessions move.
  std::vector<ReplicaView> without = {v[0], v[1], v[3]};
  for (const auto& [key, r] : home) {
    RouteInput in;
    in.session_key = key;
    const std::string now(without[p.Pick(in, without).index].id);
    if (r != "r2") EXPECT_EQ(now, r) << key;
    else EXPECT_NE(now, "r2");
  }
}

TEST(SessionPolicyTest, WithoutAKeyFallsBackToLeastLoaded) {
  std::vector<std::string> ids;
  auto v = Views({4, 2, 0}, &ids);
  SessionPolicy p;
  EXPECT_EQ(p.Pick({}, v).index, 2u);
}

TEST(SessionPolicyTest, RendezvousHashDependsOnBothInputs) {
  EXPECT_NE(RendezvousHash("a", "r1"), RendezvousHash("a", "r2"));
  EXPECT_NE(RendezvousHash("a", "r1"), RendezvousHash("b", "r1"));
  EXPECT_NE(RendezvousHash("ab", "c"), RendezvousHash("a", "bc"));  // the separator matters
}

}  // namespace
}  // namespace pagoda::gateway
