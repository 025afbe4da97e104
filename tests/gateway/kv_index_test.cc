#include "gateway/kv_index.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "gateway/block_hasher.h"

namespace pagoda::gateway {
namespace {

constexpr int kBs = 4;

std::vector<int32_t> Tokens(int n, int32_t start = 1) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::vector<std::string> Names(const std::string& prefix, int from, int n) {
  std::vector<std::string> v;
  for (int i = from; i < from + n; ++i) v.push_back(prefix + std::string(1, static_cast<char>('0' + i)));
  return v;
}

// (Not "r" + std::to_string(i): GCC 12 warns -Wrestrict on that falsely.)
std::string Id(int i) {
  std::string s = "r";
  s += std::to_string(i);
  return s;
}

std::span<const int32_t> Slice(const std::vector<int32_t>& t, int from_block, int n_blocks) {
  return std::span<const int32_t>(t).subspan(static_cast<size_t>(from_block * kBs), static_cast<size_t>(n_blocks * kBs));
}

// The engine's view: 4 blocks of `t` stored in two events, the second chained
// on the first's last block.
void StoreInTwoEvents(KvIndex& index, const std::string& replica, const std::vector<int32_t>& t) {
  const auto e = Names("e", 0, 4);
  index.OnStored(replica, std::nullopt, std::span(e).first(2), Slice(t, 0, 2), kBs);
  index.OnStored(replica, e[1], std::span(e).subspan(2, 2), Slice(t, 2, 2), kBs);
}

TEST(KvIndexTest, EventChainMatchesTheRequestsOwnChain) {
  KvIndex index;
  const auto t = Tokens(4 * kBs + 3);
  StoreInTwoEvents(index, "a", t);
  const auto chain = ChainedBlockHashes(t, kBs);
  ASSERT_EQ(chain.size(), 4u);
  EXPECT_EQ(index.MatchedBlocks("a", chain), 4u);
  EXPECT_EQ(index.MatchedBlocks("b", chain), 0u);
  // A request that diverges in block 2 matches the first two.
  auto other = t;
  other[2 * kBs + 1] = 777;
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(other, kBs)), 2u);
  // Same tokens in block 2 but a different block 0: nothing (chained).
  auto head = t;
  head[0] = 555;
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(head, kBs)), 0u);
  const auto s = index.Stats("a");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->blocks, 4u);
  EXPECT_EQ(s->stored, 4);
  EXPECT_EQ(s->block_size, kBs);
}

// Two tenants store the same tokens under their own cache scopes: a request
// meets only its own scope's blocks, and the unscoped chain meets neither.
TEST(KvIndexTest, ScopedChainsMeetOnlyTheirOwnScope) {
  KvIndex index;
  const auto t = Tokens(3 * kBs);
  const uint64_t a = StableHash("tenant-a"), b = StableHash("tenant-b");
  const auto e = Names("e", 0, 3);
  const auto f = Names("f", 0, 3);
  index.OnStored("r", std::nullopt, e, t, kBs, a);
  index.OnStored("r", std::nullopt, std::span(f).first(2), Slice(t, 0, 2), kBs, b);
  EXPECT_EQ(index.MatchedBlocks("r", ChainedBlockHashes(t, kBs, ScopedRoot(0, a))), 3u);
  EXPECT_EQ(index.MatchedBlocks("r", ChainedBlockHashes(t, kBs, ScopedRoot(0, b))), 2u);
  EXPECT_EQ(index.MatchedBlocks("r", ChainedBlockHashes(t, kBs)), 0u);
  EXPECT_EQ(ScopedRoot(17, 0), 17u);  // no scope: the plain salt
  EXPECT_NE(ScopedRoot(0, a), ScopedRoot(0, b));
}

TEST(KvIndexTest, UnknownParentIsCountedAndSkipped) {
  KvIndex index;
  const auto t = Tokens(4 * kBs);
  const auto e = Names("e", 2, 2);
  index.OnStored("a", std::string("never-stored"), e, Slice(t, 2, 2), kBs);
  const auto s = index.Stats("a");
  EXPECT_EQ(s->orphans, 1);
  EXPECT_EQ(s->blocks, 0u);
  // The orphan's blocks are not guessed as roots either.
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(Slice(t, 2, 2), kBs)), 0u);
}

TEST(KvIndexTest, TokenCountThatDoesNotFillTheBlocksIsMalformed) {
  KvIndex index;
  const auto t = Tokens(2 * kBs - 1);
  const auto e = Names("e", 0, 2);
  index.OnStored("a", std::nullopt, e, t, kBs);
  index.OnStored("a", std::nullopt, e, Tokens(2 * kBs), 0);
  EXPECT_EQ(index.Stats("a")->malformed, 2);
  EXPECT_EQ(index.Stats("a")->blocks, 0u);
}

TEST(KvIndexTest, RemovingABlockCutsTheLeadingMatchThere) {
  KvIndex index;
  const auto t = Tokens(4 * kBs);
  StoreInTwoEvents(index, "a", t);
  const std::vector<std::string> gone = {"e1", "nope"};
  index.OnRemoved("a", gone);
  const auto chain = ChainedBlockHashes(t, kBs);
  EXPECT_EQ(index.MatchedBlocks("a", chain), 1u);
  const auto s = index.Stats("a");
  EXPECT_EQ(s->removed, 1);
  EXPECT_EQ(s->unknown_removed, 1);
  EXPECT_EQ(s->blocks, 3u);
  // A child stored under the removed parent is now an orphan.
  const std::vector<std::string> child = {"e9"};
  index.OnStored("a", std::string("e1"), child, Slice(t, 2, 1), kBs);
  EXPECT_EQ(index.Stats("a")->orphans, 1);
}

// An offload tier announces blocks as they leave the pool: stored in DISK
// (parent = a root the event cannot place, tokens as stored), then removed
// from memory. The blocks stay held, credited at the DISK weight; removing
// them from DISK too drops them; a medium the block is not in is unknown.
TEST(KvIndexTest, LowerTierMediaKeepBlocksAtTheirCredit) {
  KvIndex index;  // default credit: DISK 0.9, REDIS 0.8
  const auto t = Tokens(4 * kBs);
  StoreInTwoEvents(index, "a", t);  // no medium: memory
  const auto chain = ChainedBlockHashes(t, kBs);
  const auto e = Names("e", 0, 4);
  const std::vector<std::string_view> replicas = {"a"};
  std::vector<size_t> n(1);
  std::vector<double> credit(1);
  index.MatchedBlocks(replicas, chain, n, credit);
  EXPECT_EQ(n[0], 4u);
  EXPECT_DOUBLE_EQ(credit[0], 4.0);

  // Blocks 2 and 3 go to disk (the parent named is the engine's, unknown to
  // the index as a root would be: the blocks are known, so only the medium is added).
  index.OnStored("a", std::string("root?"), std::span(e).subspan(2, 2), Slice(t, 2, 2), kBs, 0, "disk");
  index.OnRemoved("a", std::span(e).subspan(2, 2), "CPU");  // an unlisted medium is memory
  index.MatchedBlocks(replicas, chain, n, credit);
  EXPECT_EQ(n[0], 4u);
  EXPECT_DOUBLE_EQ(credit[0], 2.0 + 2 * 0.9);
  auto s = index.Stats("a");
  EXPECT_EQ(s->blocks, 4u);
  EXPECT_EQ(s->lower_tier_only, 2u);
  EXPECT_EQ(s->orphans, 0);

  // Block 3 also in REDIS: its best medium is DISK still.
  index.OnStored("a", std::nullopt, std::span(e).subspan(3, 1), Slice(t, 3, 1), kBs, 0, "REDIS");
  index.MatchedBlocks(replicas, chain, n, credit);
  EXPECT_DOUBLE_EQ(credit[0], 2.0 + 2 * 0.9);
  // Out of DISK: block 2 is gone (the match stops there), block 3 stays in REDIS.
  index.OnRemoved("a", std::span(e).subspan(2, 2), "DISK");
  EXPECT_EQ(index.MatchedBlocks("a", chain), 2u);
  s = index.Stats("a");
  EXPECT_EQ(s->blocks, 3u);
  EXPECT_EQ(s->lower_tier_only, 1u);
  // Removing from a medium the block is not in changes nothing.
  index.OnRemoved("a", std::span(e).subspan(3, 1), "DISK");
  EXPECT_EQ(index.Stats("a")->unknown_removed, 1);
  EXPECT_EQ(index.Stats("a")->blocks, 3u);
  // Restored to memory: full credit again from block 0 to 1, and block 3
  // (memory) after a block 2 stored back in memory under its parent.
  index.OnStored("a", e[1], std::span(e).subspan(2, 1), Slice(t, 2, 1), kBs);
  index.OnStored("a", e[2], std::span(e).subspan(3, 1), Slice(t, 3, 1), kBs);
  index.MatchedBlocks(replicas, chain, n, credit);
  EXPECT_EQ(n[0], 4u);
  EXPECT_DOUBLE_EQ(credit[0], 4.0);
  EXPECT_EQ(index.Stats("a")->lower_tier_only, 0u);
}

TEST(KvIndexTest, MediumCreditIsConfigurable) {
  KvIndex::Options o;
  o.medium_credit = {{"CPU", 0.5}};  // e.g. vLLM's CPU offload below its GPU blocks
  KvIndex index(o);
  const auto t = Tokens(2 * kBs);
  const auto e = Names("e", 0, 2);
  index.OnStored("a", std::nullopt, e, Slice(t, 0, 2), kBs, 0, "GPU");
  index.OnStored("a", std::nullopt, e, Slice(t, 0, 2), kBs, 0, "CPU");
  index.OnRemoved("a", std::span(e).subspan(1, 1), "GPU");
  const std::vector<std::string_view> replicas = {"a"};
  std::vector<size_t> n(1);
  std::vector<double> credit(1);
  index.MatchedBlocks(replicas, ChainedBlockHashes(t, kBs), n, credit);
  EXPECT_EQ(n[0], 2u);
  EXPECT_DOUBLE_EQ(credit[0], 1.5);
}

TEST(KvIndexTest, ClearedAndRemovedReplicasHoldNothing) {
  KvIndex index;
  const auto t = Tokens(4 * kBs);
  StoreInTwoEvents(index, "a", t);
  StoreInTwoEvents(index, "b", t);
  const auto chain = ChainedBlockHashes(t, kBs);
  index.OnCleared("a");
  EXPECT_EQ(index.MatchedBlocks("a", chain), 0u);
  EXPECT_EQ(index.Stats("a")->cleared, 1);
  EXPECT_EQ(index.MatchedBlocks("b", chain), 4u);
  index.RemoveReplica("b");
  EXPECT_EQ(index.MatchedBlocks("b", chain), 0u);
  EXPECT_FALSE(index.Stats("b").has_value());
  ASSERT_EQ(index.AllStats().size(), 1u);
  EXPECT_EQ(index.AllStats()[0].replica, "a");
}

TEST(KvIndexTest, BatchMatchAnswersEachReplica) {
  KvIndex index;
  const auto t = Tokens(4 * kBs);
  StoreInTwoEvents(index, "a", t);
  const auto e = Names("e", 0, 1);
  index.OnStored("c", std::nullopt, e, Slice(t, 0, 1), kBs);
  const std::vector<std::string_view> ids = {"a", "b", "c"};
  std::vector<size_t> out(3, 99);
  index.MatchedBlocks(ids, ChainedBlockHashes(t, kBs), out);
  EXPECT_EQ(out, (std::vector<size_t>{4, 0, 1}));
}

TEST(KvIndexTest, TwoEngineBlocksWithTheSameTokensShareOneEntry) {
  KvIndex index;
  const auto t = Tokens(kBs);
  const std::vector<std::string> x = {"x"}, y = {"y"};
  index.OnStored("a", std::nullopt, x, t, kBs);
  index.OnStored("a", std::nullopt, y, t, kBs);
  EXPECT_EQ(index.Stats("a")->blocks, 1u);
  index.OnRemoved("a", x);
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(t, kBs)), 1u);  // "y" still holds it
  index.OnRemoved("a", y);
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(t, kBs)), 0u);
}

TEST(KvIndexTest, SaltMustMatchTheRequestsChain) {
  KvIndex::Options o;
  o.salt = 42;
  KvIndex index(o);
  const auto t = Tokens(2 * kBs);
  const auto e = Names("e", 0, 2);
  index.OnStored("a", std::nullopt, e, t, kBs);
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(t, kBs, 42)), 2u);
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(t, kBs, 0)), 0u);
}

TEST(KvIndexTest, CapacityBoundsTheBlocksPerReplica) {
  KvIndex::Options o;
  o.max_blocks_per_replica = 3;
  KvIndex index(o);
  const auto t = Tokens(5 * kBs);
  const auto e = Names("e", 0, 5);
  index.OnStored("a", std::nullopt, e, t, kBs);
  const auto s = index.Stats("a");
  EXPECT_EQ(s->blocks, 3u);
  EXPECT_EQ(s->over_capacity, 2);
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(t, kBs)), 3u);
  // Removals free room again.
  index.OnRemoved("a", std::span(e).first(3));
  index.OnStored("a", std::nullopt, std::span(e).first(2), Slice(t, 0, 2), kBs);
  EXPECT_EQ(index.MatchedBlocks("a", ChainedBlockHashes(t, kBs)), 2u);
}

TEST(KvIndexTest, ConcurrentWritersAndReadersEndInTheWritersState) {
  KvIndex index;
  constexpr int kReplicas = 4, kRounds = 300, kBlocks = 8;
  const auto t = Tokens(kBlocks * kBs);
  const auto chain = ChainedBlockHashes(t, kBs);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      const std::vector<std::string_view> ids = {"r0", "r1", "r2", "r3"};
      std::vector<size_t> out(ids.size());
      while (!stop.load()) {
        index.MatchedBlocks(ids, chain, out);
        for (size_t m : out) ASSERT_LE(m, static_cast<size_t>(kBlocks));
        ++reads;
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < kReplicas; ++w) {
    writers.emplace_back([&, w] {
      const std::string id = Id(w);
      const auto e = Names(id + "-", 0, kBlocks);
      for (int round = 0; round < kRounds; ++round) {
        index.OnStored(id, std::nullopt, e, t, kBs);
        if (round % 3 == 0) index.OnCleared(id);
        else index.OnRemoved(id, std::span(e).subspan(static_cast<size_t>(w + 1)));
      }
      // Final state: the first w + 1 blocks.
      index.OnStored(id, std::nullopt, std::span(e).first(static_cast<size_t>(w + 1)),
                     std::span(t).first(static_cast<size_t>((w + 1) * kBs)), kBs);
    });
  }
  for (auto& th : writers) th.join();
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_GT(reads.load(), 0);
  for (int w = 0; w < kReplicas; ++w) {
    EXPECT_EQ(index.MatchedBlocks(Id(w), chain), static_cast<size_t>(w + 1)) << w;
  }
}

}  // namespace
}  // namespace pagoda::gateway
