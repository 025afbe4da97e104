#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace pagoda {
namespace {

TEST(ThreadPoolTest, RunsEveryIndexExactlyOnce) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    EXPECT_EQ(pool.size(), n);
    std::vector<std::atomic<int>> hits(n);
    pool.Run([&](int ith, int nth) {
      EXPECT_EQ(nth, n);
      hits[ith].fetch_add(1);
    });
    for (int i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPoolTest, CallingThreadIsThreadZero) {
  ThreadPool pool(3);
  const auto caller = std::this_thread::get_id();
  std::thread::id seen;
  pool.Run([&](int ith, int) {
    if (ith == 0) seen = std::this_thread::get_id();
  });
  EXPECT_EQ(seen, caller);
}

TEST(ThreadPoolTest, ManyBackToBackRunsSeeAllWritesOfThePrevious) {
  ThreadPool pool(2);
  std::vector<int> data(2, 0);
  for (int iter = 0; iter < 20000; ++iter) {
    pool.Run([&](int ith, int) { data[ith] += 1; });
    ASSERT_EQ(data[0], iter + 1);
    ASSERT_EQ(data[1], iter + 1);
  }
}

TEST(ThreadPoolTest, WakesWorkersAfterTheySleep) {
  ThreadPool pool(3);
  std::atomic<int> total{0};
  for (int iter = 0; iter < 5; ++iter) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // past the spin window
    pool.Run([&](int ith, int) { total.fetch_add(ith + 1); });
  }
  EXPECT_EQ(total.load(), 5 * (1 + 2 + 3));
}

TEST(ThreadPoolTest, DefaultThreadCountIsPositive) { EXPECT_GE(DefaultThreadCount(), 1); }

}  // namespace
}  // namespace pagoda
