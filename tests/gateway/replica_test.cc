#include "gateway/replica.h"

#include <gtest/gtest.h>

namespace pagoda::gateway {
namespace {

using std::chrono::milliseconds;

HealthOptions Opts() {
  HealthOptions o;
  o.eject_after_failures = 2;
  o.circuit_open = milliseconds(1000);
  o.slow_start = milliseconds(1000);
  o.readmit_after_probes = 2;
  return o;
}

TEST(LoadGuardTest, CountsWhileHeldAndReleasesOnce) {
  auto s = std::make_shared<ReplicaState>(Opts());
  {
    LoadGuard g(s, 5);
    EXPECT_EQ(s->active_requests.load(), 1);
    EXPECT_EQ(s->active_blocks.load(), 5);
    LoadGuard moved = std::move(g);
    EXPECT_FALSE(g.held());
    EXPECT_EQ(s->active_requests.load(), 1);
    moved.Release();
    moved.Release();
    EXPECT_EQ(s->active_requests.load(), 0);
  }
  EXPECT_EQ(s->active_requests.load(), 0);
  EXPECT_EQ(s->active_blocks.load(), 0);
  {
    LoadGuard a(s, 2), b(s, 3);
    a = std::move(b);  // a's own count is released, b's carried
    EXPECT_EQ(s->active_requests.load(), 1);
    EXPECT_EQ(s->active_blocks.load(), 3);
  }
  EXPECT_EQ(s->active_requests.load(), 0);
  EXPECT_EQ(s->active_blocks.load(), 0);
}

TEST(LoadGuardTest, EstimateBlocksRoundsUp) {
  EXPECT_EQ(EstimateBlocks(0, 0, 16), 1);
  EXPECT_EQ(EstimateBlocks(16, 0, 16), 1);
  EXPECT_EQ(EstimateBlocks(16, 1, 16), 2);
  EXPECT_EQ(EstimateBlocks(100, 28, 16), 8);
}

TEST(ReplicaStateTest, ProbeFailureEjectsAndPassingProbesReadmitWithSlowStart) {
  ReplicaState s(Opts());
  const auto t0 = ReplicaState::Clock::now();
  EXPECT_TRUE(s.Eligible(t0));
  s.OnProbe(false, t0);
  EXPECT_FALSE(s.Eligible(t0));
  EXPECT_EQ(s.ejections(), 1u);
  s.OnProbe(true, t0 + milliseconds(10));
  EXPECT_FALSE(s.Eligible(t0 + milliseconds(10)));  // one passing probe is not enough
  const auto t2 = t0 + milliseconds(20);
  s.OnProbe(true, t2);
  EXPECT_TRUE(s.Eligible(t2));
  EXPECT_NEAR(s.Ramp(t2), 0.1, 1e-9);  // the floor
  EXPECT_NEAR(s.Ramp(t2 + milliseconds(500)), 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(s.Ramp(t2 + milliseconds(1500)), 1.0);
}

TEST(ReplicaStateTest, PassiveFailuresOpenTheCircuit) {
  ReplicaState s(Opts());
  const auto t0 = ReplicaState::Clock::now();
  s.OnFailure(t0);
  EXPECT_TRUE(s.Eligible(t0));
  s.OnFailure(t0);
  EXPECT_FALSE(s.Eligible(t0));
  EXPECT_EQ(s.Snapshot(t0).circuit, CircuitBreaker::State::kOpen);
  const auto t1 = t0 + milliseconds(1000);
  EXPECT_TRUE(s.Eligible(t1));
  ASSERT_TRUE(s.OnSend(t1));
  s.OnSuccess(t1);
  EXPECT_EQ(s.Snapshot(t1).circuit, CircuitBreaker::State::kClosed);
  EXPECT_LT(s.Ramp(t1), 1.0);  // back from an open circuit: slow start
}

}  // namespace
}  // namespace pagoda::gateway
