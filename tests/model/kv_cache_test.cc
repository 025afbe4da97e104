#include "model/kv_cache.h"

#include <string>

#include <gtest/gtest.h>

#include "tensor/fp16.h"

namespace pagoda {
namespace {

KvCacheSpec Spec() { return KvCacheSpec{{KvLayerSpec{2, 4, 4}, KvLayerSpec{1, 8, 0}}}; }

class ContiguousKvCacheTypeTest : public ::testing::TestWithParam<KvType> {};

TEST_P(ContiguousKvCacheTypeTest, WrittenRowsReadBackThroughTheView) {
  const KvType type = GetParam();
  auto kv = ContiguousKvCache::Create(Spec(), 2, 16, type);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ((*kv)->type(), type);
  Batch b;
  for (int i = 0; i < 3; ++i) b.Add(0, i, 1, false);
  ASSERT_TRUE((*kv)->Prepare(b).ok());
  // 0.1 is not an f16 value: the f16 cache stores it rounded (0.0999755859375).
  const float k[8] = {1, 2, 3, 4, 5, 0.1f, 7, 65504};
  const float v[8] = {-1, -2, -3, -4, -5, -6, -7, -8};
  (*kv)->WriteK(0, 1, 2, k);
  (*kv)->WriteV(0, 1, 2, v);
  (*kv)->WriteK(1, 1, 2, k);  // layer 1: 8 wide, no V
  const kernels::KvView view = (*kv)->View(0, 1);
  EXPECT_EQ(view.type, type);
  auto at = [&](const void* const* blocks, int64_t pos_stride, int64_t head_stride, int head, int d) {
    const int64_t i = (2 % view.block_size) * pos_stride + head * head_stride + d;
    const void* block = blocks[2 / view.block_size];
    return type == KvType::kF16 ? F16ToF32(static_cast<const uint16_t*>(block)[i])
                                : static_cast<const float*>(block)[i];
  };
  EXPECT_EQ(at(view.k_blocks, view.k_pos_stride, view.k_head_stride, 1, 1),
            type == KvType::kF16 ? 0.0999755859375f : 0.1f);
  EXPECT_EQ(at(view.k_blocks, view.k_pos_stride, view.k_head_stride, 1, 3), 65504.0f);
  EXPECT_EQ(at(view.v_blocks, view.v_pos_stride, view.v_head_stride, 0, 2), -3.0f);
  const kernels::KvView view1 = (*kv)->View(1, 1);
  EXPECT_EQ(view1.k_head_stride, 8);
  EXPECT_EQ((*kv)->SequenceLength(1), 3);
  EXPECT_EQ((*kv)->SequenceLength(0), 0);
}

INSTANTIATE_TEST_SUITE_P(Types, ContiguousKvCacheTypeTest,
                         ::testing::Values(KvType::kF32, KvType::kF16),
                         [](const ::testing::TestParamInfo<KvType>& info) {
                           return std::string(kernels::KvTypeName(info.param));
                         });

TEST(ContiguousKvCacheTest, DefaultsToF16) {
  auto kv = ContiguousKvCache::Create(Spec(), 1, 4);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ((*kv)->type(), KvType::kF16);
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
