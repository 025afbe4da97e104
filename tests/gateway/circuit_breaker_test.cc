#include "gateway/circuit_breaker.h"

#include <gtest/gtest.h>

namespace pagoda::gateway {
namespace {

using State = CircuitBreaker::State;
using std::chrono::milliseconds;

TEST(CircuitBreakerTest, OpensAfterThresholdConsecutiveFailures) {
  CircuitBreaker cb(3, milliseconds(100));
  const auto t0 = CircuitBreaker::Clock::time_point{} + std::chrono::seconds(10);
  EXPECT_FALSE(cb.OnFailure(t0));
  EXPECT_FALSE(cb.OnFailure(t0));
  cb.OnSuccess(t0);  // resets the run
  EXPECT_FALSE(cb.OnFailure(t0));
  EXPECT_FALSE(cb.OnFailure(t0));
  EXPECT_EQ(cb.state(t0), State::kClosed);
  EXPECT_TRUE(cb.OnFailure(t0));
  EXPECT_EQ(cb.state(t0), State::kOpen);
  EXPECT_FALSE(cb.CanSend(t0 + milliseconds(99)));
  EXPECT_EQ(cb.times_opened(), 1u);
}

TEST(CircuitBreakerTest, HalfOpenAdmitsOneTrialThatClosesOnSuccess) {
  CircuitBreaker cb(1, milliseconds(100));
  const auto t0 = CircuitBreaker::Clock::time_point{} + std::chrono::seconds(10);
  ASSERT_TRUE(cb.OnFailure(t0));
  const auto t1 = t0 + milliseconds(100);
  EXPECT_EQ(cb.state(t1), State::kHalfOpen);
  EXPECT_TRUE(cb.OnSend(t1));
  EXPECT_FALSE(cb.CanSend(t1));  // one trial at a time
  EXPECT_FALSE(cb.OnSend(t1));
  cb.OnSuccess(t1);
  EXPECT_EQ(cb.state(t1), State::kClosed);
  EXPECT_TRUE(cb.CanSend(t1));
}

TEST(CircuitBreakerTest, FailedTrialReopensForAnotherFullPeriod) {
  CircuitBreaker cb(1, milliseconds(100));
  const auto t0 = CircuitBreaker::Clock::time_point{} + std::chrono::seconds(10);
  ASSERT_TRUE(cb.OnFailure(t0));
  const auto t1 = t0 + milliseconds(150);
  ASSERT_TRUE(cb.OnSend(t1));
  EXPECT_TRUE(cb.OnFailure(t1));
  EXPECT_EQ(cb.state(t1 + milliseconds(99)), State::kOpen);
  EXPECT_EQ(cb.state(t1 + milliseconds(100)), State::kHalfOpen);
  EXPECT_EQ(cb.times_opened(), 2u);
}

TEST(CircuitBreakerTest, AbandonedTrialFreesTheSlot) {
  CircuitBreaker cb(1, milliseconds(10));
  const auto t0 = CircuitBreaker::Clock::time_point{} + std::chrono::seconds(10);
  ASSERT_TRUE(cb.OnFailure(t0));
  const auto t1 = t0 + milliseconds(10);
  ASSERT_TRUE(cb.OnSend(t1));
  EXPECT_FALSE(cb.CanSend(t1));
  cb.OnAbandoned();
  EXPECT_TRUE(cb.CanSend(t1));
}

}  // namespace
}  // namespace pagoda::gateway
