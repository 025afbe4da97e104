#include "kv/prefix_cache.h"

#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace pagoda::kv {
namespace {

constexpr int32_t kBs = 4;

std::unique_ptr<BlockPool> MakePool(int32_t n_blocks) {
  BlockPoolOptions o;
  o.layers = {KvLayerWidths{4, 4}};
  o.block_size = kBs;
  o.memory_bytes = n_blocks * BlockPool::BlockBytes(o);
  auto pool = BlockPool::Create(o);
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return std::move(pool).value();
}

std::vector<int32_t> Iota(int n, int32_t first = 0) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

class PrefixCacheTest : public ::testing::Test {
 protected:
  // Takes blocks for the full blocks of `tokens` and registers them, as a
  // sequence that computed them would; returns the blocks (held).
  std::vector<BlockId> Fill(const std::vector<int32_t>& tokens, std::string_view salt = "") {
    std::vector<BlockId> blocks;
    BlockHash parent = cache_.hasher().Root(salt);
    for (size_t i = 0; i + kBs <= tokens.size(); i += kBs) {
      const BlockId b = pool_->Allocate();
      EXPECT_NE(b, kNoBlock);
      const BlockHash h = cache_.hasher().Next(parent, std::span(tokens).subspan(i, kBs));
      cache_.Store(h, parent, b);
      blocks.push_back(b);
      parent = h;
    }
    return blocks;
  }
  int32_t Lookup(const std::vector<int32_t>& tokens, std::string_view salt = "", int32_t max_blocks = 100) {
    found_.clear();
    hashes_.clear();
    return cache_.Lookup(tokens, salt, max_blocks, &found_, &hashes_);
  }

  std::unique_ptr<BlockPool> pool_ = MakePool(8);
  PrefixCache cache_{*pool_};
  std::vector<BlockId> found_;
  std::vector<BlockHash> hashes_;
};

TEST_F(PrefixCacheTest, FindsTheLongestCachedFullBlockPrefix) {
  const std::vector<BlockId> blocks = Fill(Iota(12));
  EXPECT_EQ(cache_.n_registered(), 3);
  std::vector<int32_t> q = Iota(14);  // 3 full blocks and 2 tokens
  EXPECT_EQ(Lookup(q), 3);
  EXPECT_EQ(found_, blocks);
  EXPECT_EQ(hashes_.size(), 3u);
  q[9] = 99;  // third block differs
  EXPECT_EQ(Lookup(q), 2);
  EXPECT_EQ(found_, (std::vector<BlockId>{blocks[0], blocks[1]}));
  q[0] = 99;  // first block differs: nothing after it matches either
  EXPECT_EQ(Lookup(q), 0);
  EXPECT_EQ(Lookup(Iota(3)), 0);  // no full block
  EXPECT_EQ(Lookup(Iota(12), "", 1), 1);
}

TEST_F(PrefixCacheTest, SameTokensUnderAnotherSaltDoNotMatch) {
  Fill(Iota(8), "tenant-a");
  EXPECT_EQ(Lookup(Iota(8), "tenant-a"), 2);
  EXPECT_EQ(Lookup(Iota(8), "tenant-b"), 0);
  EXPECT_EQ(Lookup(Iota(8)), 0);
}

TEST_F(PrefixCacheTest, SharedPrefixIsFoundFromDivergingRequests) {
  Fill(Iota(8));
  std::vector<int32_t> other = Iota(8);
  other.insert(other.end(), {50, 51, 52, 53});
  EXPECT_EQ(Lookup(other), 2);
}

TEST_F(PrefixCacheTest, LookupTakesNoReferenceAndCountsNothing) {
  const std::vector<BlockId> blocks = Fill(Iota(4));
  EXPECT_EQ(Lookup(Iota(4)), 1);
  EXPECT_EQ(pool_->ref_count(blocks[0]), 1);
  EXPECT_EQ(cache_.stats().tokens_queried, 0);
  cache_.RecordQuery(10, 4);
  cache_.RecordQuery(6, 0);
  EXPECT_EQ(cache_.stats().tokens_queried, 16);
  EXPECT_EQ(cache_.stats().tokens_hit, 4);
}

TEST_F(PrefixCacheTest, DuplicateBlockStaysPrivate) {
  const std::vector<BlockId> first = Fill(Iota(4));
  const std::vector<BlockId> second = Fill(Iota(4));  // computed again by another sequence
  EXPECT_EQ(cache_.n_registered(), 1);
  EXPECT_TRUE(pool_->cached(first[0]));
  EXPECT_FALSE(pool_->cached(second[0]));
  EXPECT_EQ(cache_.stats().blocks_stored, 1);
}

TEST_F(PrefixCacheTest, UnreferencedBlocksAreEvictedLeastRecentlyReleasedFirst) {
  std::vector<PrefixCacheEvent> events;
  cache_.SetEventSink([&](const PrefixCacheEvent& e) { events.push_back(e); });
  const std::vector<BlockId> a = Fill(Iota(8));       // 2 blocks
  const std::vector<BlockId> b = Fill(Iota(8, 100));  // 2 blocks
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, PrefixCacheEvent::Kind::kStored);
  EXPECT_EQ(events[0].parent, cache_.hasher().Root(""));
  EXPECT_EQ(events[1].parent, events[0].hash);
  // Release b (tail first), then a: b's blocks are older in the LRU.
  pool_->Release(b[1]);
  pool_->Release(b[0]);
  pool_->Release(a[1]);
  pool_->Release(a[0]);
  EXPECT_EQ(cache_.n_registered(), 4);
  EXPECT_EQ(Lookup(Iota(8, 100)), 2);  // still cached while unreferenced
  events.clear();
  // 4 free blocks go first; the next two allocations evict b's tail, then b's head.
  for (int i = 0; i < 4; ++i) ASSERT_NE(pool_->Allocate(), kNoBlock);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(pool_->Allocate(), b[1]);
  EXPECT_EQ(pool_->Allocate(), b[0]);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, PrefixCacheEvent::Kind::kEvicted);
  EXPECT_EQ(cache_.Find(events[0].hash), kNoBlock);
  EXPECT_EQ(Lookup(Iota(8, 100)), 0);
  EXPECT_EQ(Lookup(Iota(8)), 2);
  EXPECT_EQ(cache_.stats().blocks_evicted, 2);
}

TEST_F(PrefixCacheTest, ForgetUnregistersABlockBeforeARewrite) {
  std::vector<PrefixCacheEvent> events;
  cache_.SetEventSink([&](const PrefixCacheEvent& e) { events.push_back(e); });
  const std::vector<BlockId> a = Fill(Iota(4));
  cache_.Forget(a[0]);
  EXPECT_FALSE(pool_->cached(a[0]));
  EXPECT_EQ(Lookup(Iota(4)), 0);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, PrefixCacheEvent::Kind::kEvicted);
  pool_->Release(a[0]);
  EXPECT_EQ(pool_->n_free(), 8);  // no longer kept once unreferenced
}

TEST(PrefixCacheDisabledTest, StoresAndFindsNothing) {
  auto pool = MakePool(2);
  PrefixCache cache(*pool, /*enabled=*/false);
  const BlockId b = pool->Allocate();
  const BlockHash h = cache.hasher().Next(cache.hasher().Root(""), Iota(kBs));
  EXPECT_FALSE(cache.Store(h, cache.hasher().Root(""), b));
  EXPECT_FALSE(pool->cached(b));
  std::vector<BlockId> found;
  std::vector<BlockHash> hashes;
  EXPECT_EQ(cache.Lookup(Iota(kBs), "", 1, &found, &hashes), 0);
}

}  // namespace
}  // namespace pagoda::kv
