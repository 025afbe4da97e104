#include "model/kv_cache.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

KvCacheSpec Spec() { return KvCacheSpec{{KvLayerSpec{2, 4, 4}, KvLayerSpec{1, 8, 0}}}; }

TEST(ContiguousKvCacheTest, RowsAndViewsAgree) {
  auto kv = ContiguousKvCache::Create(Spec(), 2, 16);
  ASSERT_TRUE(kv.ok());
  Batch b;
  for (int i = 0; i < 3; ++i) b.Add(0, i, 1, false);
  ASSERT_TRUE((*kv)->Prepare(b).ok());
  float* k = (*kv)->KRow(0, 1, 2);
  k[5] = 42.0f;  // head 1, dim 1
  const kernels::KvView v = (*kv)->View(0, 1);
  EXPECT_EQ(v.k_blocks[2 / v.block_size][(2 % v.block_size) * v.k_pos_stride + 1 * v.k_head_stride + 1], 42.0f);
  EXPECT_EQ((*kv)->SequenceLength(1), 3);
  EXPECT_EQ((*kv)->SequenceLength(0), 0);
}

TEST(ContiguousKvCacheTest, TruncateAllowsRewriting) {
  auto kv = ContiguousKvCache::Create(Spec(), 1, 4);
  ASSERT_TRUE(kv.ok());
  Batch b;
  for (int i = 0; i < 4; ++i) b.Add(0, i, 0, false);
  ASSERT_TRUE((*kv)->Prepare(b).ok());
  b.Clear();
  b.Add(0, 4, 0, false);
  EXPECT_EQ((*kv)->Prepare(b).code(), StatusCode::kResourceExhausted);
  (*kv)->Truncate(0, 2);
  EXPECT_EQ((*kv)->SequenceLength(0), 2);
  b.Clear();
  b.Add(0, 3, 0, false);  // gap after position 1
  EXPECT_EQ((*kv)->Prepare(b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*kv)->SequenceLength(0), 2);  // a failed Prepare changes nothing
  b.Clear();
  b.Add(0, 2, 0, false);
  b.Add(0, 3, 0, false);
  EXPECT_TRUE((*kv)->Prepare(b).ok());
  (*kv)->RemoveSequence(0);
  EXPECT_EQ((*kv)->SequenceLength(0), 0);
}

TEST(ContiguousKvCacheTest, RejectsBadSizes) {
  EXPECT_FALSE(ContiguousKvCache::Create(Spec(), 0, 4).ok());
  EXPECT_FALSE(ContiguousKvCache::Create(KvCacheSpec{}, 1, 4).ok());
  EXPECT_EQ(ContiguousKvCache::Create(Spec(), 1 << 30, 1 << 30).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace pagoda
