#include "kv/block_pool.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace pagoda::kv {
namespace {

// Layer 0: K and V 8 wide; layer 1: K 16 wide, no V. f16, 16 positions:
// 256 + 256 + 512 + 0 bytes.
BlockPoolOptions Options(int32_t n_blocks) {
  BlockPoolOptions o;
  o.layers = {KvLayerWidths{8, 8}, KvLayerWidths{16, 0}};
  o.type = kernels::KvType::kF16;
  o.block_size = 16;
  o.memory_bytes = n_blocks * BlockPool::BlockBytes(o);
  return o;
}

std::unique_ptr<BlockPool> MakePool(int32_t n_blocks) {
  auto pool = BlockPool::Create(Options(n_blocks));
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return std::move(pool).value();
}

TEST(BlockPoolTest, BudgetBuysWholeBlocks) {
  BlockPoolOptions o = Options(1);
  EXPECT_EQ(BlockPool::BlockBytes(o), 1024);
  o.memory_bytes = 3 * 1024 + 1000;
  auto pool = BlockPool::Create(o);
  ASSERT_TRUE(pool.ok());
  EXPECT_EQ((*pool)->n_blocks(), 3);
  EXPECT_EQ((*pool)->n_free(), 3);
  EXPECT_EQ((*pool)->n_available(), 3);
  EXPECT_EQ((*pool)->usage(), 0.0);
}

// Scaled types: codes of 1 byte, then one scale region per block holding
// [layers][K, V][n_head_kv][block_size] bytes.
TEST(BlockPoolTest, ScaledTypesAddAScaleRegion) {
  BlockPoolOptions o;
  o.layers = {KvLayerWidths{64, 64, 2}, KvLayerWidths{32, 0, 4}};
  o.type = kernels::KvType::kFp8E4M3;
  o.block_size = 16;
  // Codes: 1024 + 1024 + 512 + 0 bytes; scales (2 + 2 + 4) * 16 = 128 bytes
  // (the second layer stores no V, so it has K scales only).
  EXPECT_EQ(BlockPool::BlockBytes(o), 1024 + 1024 + 512 + 128);
  o.memory_bytes = 2 * BlockPool::BlockBytes(o);
  auto pool = BlockPool::Create(o);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  BlockPool& p = **pool;
  const auto at = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr); };
  for (BlockId b : {0, 1}) {
    EXPECT_GE(at(p.k_scales(b, 0)), at(p.v(b, 1)));  // after every code region
    EXPECT_EQ(p.v_scales(b, 0), p.k_scales(b, 0) + 2 * 16);
    EXPECT_EQ(p.k_scales(b, 1), p.v_scales(b, 0) + 2 * 16);
    EXPECT_EQ(p.v_scales(b, 1), p.k_scales(b, 1));  // no V: its "V scales" are K's
    EXPECT_LE(at(p.k_scales(b, 1) + 4 * 16), at(p.data(b)) + static_cast<uintptr_t>(p.block_bytes()));
  }
  EXPECT_EQ(at(p.data(1)) - at(p.data(0)), static_cast<uintptr_t>(p.block_bytes()));
}

TEST(BlockPoolTest, RejectsWidthsNotDividedByTheHeads) {
  BlockPoolOptions o;
  o.layers = {KvLayerWidths{60, 60, 8}};
  o.type = kernels::KvType::kInt8;
  o.memory_bytes = 1 << 20;
  EXPECT_EQ(BlockPool::BlockBytes(o), 0);
  EXPECT_FALSE(BlockPool::Create(o).ok());
}

// The capacity claim of docs/KV_CACHE.md: at one budget, fp8 / int8 blocks
// hold at least 1.968x the positions of f16 for Llama-style layers (8 KV heads
// of 64), block size 16.
TEST(BlockPoolTest, OneByteTypesHoldTwiceTheTokensOfF16) {
  BlockPoolOptions o;
  for (int l = 0; l < 16; ++l) o.layers.push_back(KvLayerWidths{512, 512, 8});
  o.block_size = 16;
  o.memory_bytes = int64_t{1} << 30;
  o.type = kernels::KvType::kF16;
  const int64_t f16 = o.memory_bytes / BlockPool::BlockBytes(o);
  for (kernels::KvType t : {kernels::KvType::kFp8E4M3, kernels::KvType::kInt8}) {
    o.type = t;
    const int64_t n = o.memory_bytes / BlockPool::BlockBytes(o);
    // One scale byte per 64-element head row: 2 x 64 / 65 = 1.969 of f16's tokens.
    EXPECT_GE(static_cast<double>(n) / f16, 2.0 * 64 / 65 - 1e-3) << kernels::KvTypeName(t);
  }
  o.type = kernels::KvType::kBf16;
  EXPECT_EQ(o.memory_bytes / BlockPool::BlockBytes(o), f16);
}

TEST(BlockPoolTest, RegionsAreAlignedAndDisjoint) {
  BlockPoolOptions o = Options(2);
  o.type = kernels::KvType::kF32;
  o.layers = {KvLayerWidths{3, 5}, KvLayerWidths{7, 1}};  // odd widths: regions padded to 64 bytes
  o.memory_bytes = 2 * BlockPool::BlockBytes(o);
  auto pool = BlockPool::Create(o);
  ASSERT_TRUE(pool.ok());
  BlockPool& p = **pool;
  const auto at = [](void* ptr) { return reinterpret_cast<uintptr_t>(ptr); };
  uintptr_t end = at(p.data(0));
  for (int l = 0; l < 2; ++l) {
    EXPECT_EQ(at(p.k(0, l)) % 64, 0u);
    EXPECT_EQ(at(p.v(0, l)) % 64, 0u);
    EXPECT_GE(at(p.k(0, l)), end);
    EXPECT_GE(at(p.v(0, l)), at(p.k(0, l)) + p.layer(l).k * 16 * 4);
    end = at(p.v(0, l)) + p.layer(l).v * 16 * 4;
  }
  EXPECT_LE(end, at(p.data(1)));
  EXPECT_EQ(at(p.data(1)) - at(p.data(0)), static_cast<uintptr_t>(p.block_bytes()));
}

TEST(BlockPoolTest, RejectsBadOptions) {
  BlockPoolOptions o = Options(1);
  o.memory_bytes = 1023;
  EXPECT_EQ(BlockPool::Create(o).status().code(), StatusCode::kInvalidArgument);
  o = Options(1);
  o.block_size = 0;
  EXPECT_EQ(BlockPool::Create(o).status().code(), StatusCode::kInvalidArgument);
  o = Options(1);
  o.layers.clear();
  EXPECT_EQ(BlockPool::Create(o).status().code(), StatusCode::kInvalidArgument);
  o = Options(1);
  o.memory_bytes = int64_t{1} << 50;
  EXPECT_EQ(BlockPool::Create(o).status().code(), StatusCode::kResourceExhausted);
}

TEST(BlockPoolTest, AllocatesUntilEveryBlockIsHeld) {
  auto pool = MakePool(3);
  std::vector<BlockId> got;
  for (int i = 0; i < 3; ++i) got.push_back(pool->Allocate());
  EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2}));
  EXPECT_EQ(pool->Allocate(), kNoBlock);
  EXPECT_EQ(pool->n_held(), 3);
  EXPECT_EQ(pool->n_available(), 0);
  EXPECT_EQ(pool->usage(), 1.0);
}

TEST(BlockPoolTest, ReleasesBlockWhenLastRefDropped) {
  auto pool = MakePool(2);
  const BlockId b = pool->Allocate();
  pool->Acquire(b);
  EXPECT_EQ(pool->ref_count(b), 2);
  pool->Release(b);
  EXPECT_EQ(pool->ref_count(b), 1);
  EXPECT_EQ(pool->n_held(), 1);
  pool->Release(b);
  EXPECT_EQ(pool->ref_count(b), 0);
  EXPECT_EQ(pool->n_held(), 0);
  EXPECT_EQ(pool->n_free(), 2);
  // The most recently freed block is handed out first.
  EXPECT_EQ(pool->Allocate(), b);
}

TEST(BlockPoolTest, CachedBlocksOutliveTheirHoldersUntilReclaimed) {
  auto pool = MakePool(3);
  std::vector<BlockId> reclaimed;
  pool->SetReclaimHook([&](BlockId b) { reclaimed.push_back(b); });
  const BlockId a = pool->Allocate(), b = pool->Allocate(), c = pool->Allocate();
  for (BlockId x : {a, b, c}) pool->SetCached(x, true);
  pool->Release(b);
  pool->Release(a);
  pool->Release(c);
  EXPECT_EQ(pool->LruOrder(), (std::vector<BlockId>{b, a, c}));
  EXPECT_EQ(pool->n_cached_idle(), 3);
  EXPECT_EQ(pool->n_free(), 0);
  EXPECT_EQ(pool->usage(), 0.0);  // cached idle blocks count as free
  EXPECT_EQ(pool->n_available(), 3);
  // Reclaimed least recently released first, the hook told before reuse.
  EXPECT_EQ(pool->Allocate(), b);
  EXPECT_EQ(reclaimed, (std::vector<BlockId>{b}));
  EXPECT_FALSE(pool->cached(b));
  EXPECT_EQ(pool->Allocate(), a);
  EXPECT_EQ(pool->LruOrder(), (std::vector<BlockId>{c}));
}

TEST(BlockPoolTest, FreeBlocksGoBeforeCachedOnes) {
  auto pool = MakePool(2);
  int n_reclaimed = 0;
  pool->SetReclaimHook([&](BlockId) { ++n_reclaimed; });
  const BlockId a = pool->Allocate(), b = pool->Allocate();
  pool->SetCached(a, true);
  pool->Release(a);
  pool->Release(b);
  EXPECT_EQ(pool->Allocate(), b);
  EXPECT_EQ(n_reclaimed, 0);
  EXPECT_TRUE(pool->cached(a));
}

TEST(BlockPoolTest, AcquireTakesACachedBlockOutOfTheLru) {
  auto pool = MakePool(2);
  const BlockId a = pool->Allocate();
  pool->SetCached(a, true);
  pool->Release(a);
  const uint32_t tag = pool->integrity_tag(a);
  pool->Acquire(a);  // a prefix-cache hit
  EXPECT_EQ(pool->ref_count(a), 1);
  EXPECT_EQ(pool->n_cached_idle(), 0);
  EXPECT_EQ(pool->integrity_tag(a), tag);  // same contents, same tag
  EXPECT_NE(pool->Allocate(), a);
  EXPECT_EQ(pool->Allocate(), kNoBlock);
}

TEST(BlockPoolTest, UncachingAnIdleBlockFreesIt) {
  auto pool = MakePool(1);
  const BlockId a = pool->Allocate();
  pool->SetCached(a, true);
  pool->Release(a);
  pool->SetCached(a, false);
  EXPECT_EQ(pool->n_cached_idle(), 0);
  EXPECT_EQ(pool->n_free(), 1);
  EXPECT_TRUE(pool->LruOrder().empty());
}

TEST(BlockPoolTest, IntegrityTagChangesEachTimeABlockIsHandedOutAgain) {
  auto pool = MakePool(1);
  const BlockId a = pool->Allocate();
  const uint32_t t1 = pool->integrity_tag(a);
  pool->Release(a);
  ASSERT_EQ(pool->Allocate(), a);
  const uint32_t t2 = pool->integrity_tag(a);
  EXPECT_NE(t1, t2);
  pool->SetCached(a, true);
  pool->Release(a);
  ASSERT_EQ(pool->Allocate(), a);  // reclaimed from the LRU
  EXPECT_NE(pool->integrity_tag(a), t2);
}

TEST(BlockPoolDeathTest, ReleasingAFreeBlockAborts) {
  auto pool = MakePool(1);
  EXPECT_DEATH(pool->Release(0), "unreferenced");
}

}  // namespace
}  // namespace pagoda::kv
