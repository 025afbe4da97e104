#include "gateway/prefix_tree.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace pagoda::gateway {
namespace {

using Clock = PrefixTree::Clock;
using std::chrono::seconds;

std::vector<size_t> Match(const PrefixTree& t, const std::vector<uint64_t>& chain,
                          const std::vector<std::string_view>& ids, Clock::time_point now,
                          Clock::duration max_age = Clock::duration::max()) {
  std::vector<size_t> out(ids.size(), 99);
  t.Match(chain, ids, out, now, max_age);
  return out;
}

TEST(PrefixTreeTest, MatchesLeadingBlocksPerReplica) {
  PrefixTree t;
  const Clock::time_point now{};
  t.Insert(std::vector<uint64_t>{1, 2, 3, 4}, "a", now);
  t.Insert(std::vector<uint64_t>{1, 2, 9}, "b", now);
  EXPECT_EQ(Match(t, {1, 2, 3, 4, 5}, {"a", "b", "c"}, now), (std::vector<size_t>{4, 2, 0}));
  EXPECT_EQ(Match(t, {7, 2, 3}, {"a", "b"}, now), (std::vector<size_t>{0, 0}));
  // Leading only: a block b was never sent ends b's match.
  t.Insert(std::vector<uint64_t>{4}, "b", now);
  EXPECT_EQ(Match(t, {1, 2, 3, 4}, {"b"}, now), (std::vector<size_t>{2}));
  EXPECT_EQ(t.size(), 5u);  // 1 2 3 4 9
}

TEST(PrefixTreeTest, EntriesOlderThanMaxAgeDoNotCount) {
  PrefixTree t;
  const Clock::time_point t0{};
  t.Insert(std::vector<uint64_t>{1, 2, 3}, "a", t0);
  t.Insert(std::vector<uint64_t>{1}, "a", t0 + seconds(8));  // refreshes block 1 only
  EXPECT_EQ(Match(t, {1, 2, 3}, {"a"}, t0 + seconds(9), seconds(10)), (std::vector<size_t>{3}));
  EXPECT_EQ(Match(t, {1, 2, 3}, {"a"}, t0 + seconds(11), seconds(10)), (std::vector<size_t>{1}));
  EXPECT_EQ(Match(t, {1, 2, 3}, {"a"}, t0 + seconds(19), seconds(10)), (std::vector<size_t>{0}));
  EXPECT_EQ(Match(t, {1, 2, 3}, {"a"}, t0 + seconds(1000)), (std::vector<size_t>{3}));
}

TEST(PrefixTreeTest, EvictsLeastRecentlyInsertedTailsFirst) {
  PrefixTree t(5);
  const Clock::time_point now{};
  t.Insert(std::vector<uint64_t>{1, 2, 3, 4}, "a", now);
  t.Insert(std::vector<uint64_t>{10, 11, 12}, "b", now);  // 7 nodes > 5: two evicted
  EXPECT_EQ(t.size(), 5u);
  EXPECT_EQ(t.evictions(), 2);
  // a's tail went first, its head survives and still matches.
  EXPECT_EQ(Match(t, {1, 2, 3, 4}, {"a"}, now), (std::vector<size_t>{2}));
  EXPECT_EQ(Match(t, {10, 11, 12}, {"b"}, now), (std::vector<size_t>{3}));
  // Inserting again refreshes: a's head becomes the youngest.
  t.Insert(std::vector<uint64_t>{1, 2}, "a", now);
  t.Insert(std::vector<uint64_t>{20, 21}, "c", now);
  EXPECT_EQ(Match(t, {1, 2}, {"a"}, now), (std::vector<size_t>{2}));
  EXPECT_EQ(Match(t, {10, 11, 12}, {"b"}, now), (std::vector<size_t>{1}));
}

TEST(PrefixTreeTest, RemoveReplicaDropsItsTagsAndEmptyNodes) {
  PrefixTree t;
  const Clock::time_point now{};
  t.Insert(std::vector<uint64_t>{1, 2}, "a", now);
  t.Insert(std::vector<uint64_t>{1, 3}, "b", now);
  t.RemoveReplica("a");
  EXPECT_EQ(Match(t, {1, 2}, {"a", "b"}, now), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(t.size(), 2u);  // 1 (b's) and 3
  t.RemoveReplica("nobody");
  t.Insert(std::vector<uint64_t>{1, 2}, "a", now);  // back with a fresh id
  EXPECT_EQ(Match(t, {1, 2}, {"a"}, now), (std::vector<size_t>{2}));
}

TEST(PrefixTreeTest, ConcurrentInsertsAndMatchesStayWithinBudget) {
  PrefixTree t(256);
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    const std::vector<std::string_view> ids = {"r0", "r1", "r2"};
    std::vector<size_t> out(ids.size());
    std::vector<uint64_t> chain = {1, 2, 3, 4, 5, 6, 7, 8};
    while (!stop.load()) {
      t.Match(chain, ids, out, Clock::now());
      for (size_t m : out) ASSERT_LE(m, chain.size());
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      const std::string id = w == 0 ? "r0" : w == 1 ? "r1" : "r2";
      for (uint64_t i = 0; i < 2000; ++i) {
        t.Insert(std::vector<uint64_t>{1, 2, 3, 1000 + i * 3 + static_cast<uint64_t>(w)}, id, Clock::now());
        if (i % 500 == 0) t.RemoveReplica(id);
      }
    });
  }
  for (auto& th : writers) th.join();
  stop = true;
  reader.join();
  EXPECT_LE(t.size(), 256u);
  std::vector<size_t> out(1);
  const std::vector<std::string_view> r0 = {"r0"};
  t.Match(std::vector<uint64_t>{1, 2, 3}, r0, out, Clock::now());
  EXPECT_EQ(out[0], 3u);
}

}  // namespace
}  // namespace pagoda::gateway
