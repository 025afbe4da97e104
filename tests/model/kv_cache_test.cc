#include "model/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "kernels/cpu/kv_quant.h"
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
  // Decoded with tensor/fp16.h and kv_quant.h, independently of the kernels.
  auto at = [&](bool is_k, int head, int d) -> float {
    const int64_t i = (2 % view.block_size) * (is_k ? view.k_pos_stride : view.v_pos_stride) +
                      head * (is_k ? view.k_head_stride : view.v_head_stride) + d;
    const void* block = (is_k ? view.k_blocks : view.v_blocks)[2 / view.block_size];
    switch (type) {
      case KvType::kF16: return F16ToF32(static_cast<const uint16_t*>(block)[i]);
      case KvType::kBf16: return BF16ToF32(static_cast<const uint16_t*>(block)[i]);
      case KvType::kF32: return static_cast<const float*>(block)[i];
      default: break;
    }
    const uint8_t e = (is_k ? view.k_scales : view.v_scales)[2 / view.block_size][head * view.block_size + 2 % view.block_size];
    const float scale = std::ldexp(1.0f, e - 127);
    const uint8_t c = static_cast<const uint8_t*>(block)[i];
    return (type == KvType::kFp8E4M3 ? kernels::Fp8E4M3ToFloat(c) : static_cast<int8_t>(c)) * scale;
  };
  // Exact for f32; the type's rounding otherwise (scaled types: relative to
  // the head's largest value, 65504 for K head 1, 8 for V head 0).
  auto near = [&](float got, float want, float head_amax) {
    switch (type) {
      case KvType::kF32: return got == want;
      case KvType::kF16: return std::abs(got - want) <= std::abs(want) * 0x1p-11f;
      case KvType::kBf16: return std::abs(got - want) <= std::abs(want) * 0x1p-8f;
      case KvType::kFp8E4M3: return std::abs(got - want) <= std::max(std::abs(want) * 0x1p-4f, head_amax * 0x1p-12f);
      case KvType::kInt8: return std::abs(got - want) <= head_amax / 127.0f;
    }
    return false;
  };
  EXPECT_TRUE(near(at(true, 1, 1), 0.1f, 65504)) << at(true, 1, 1);
  if (type == KvType::kF16) EXPECT_EQ(at(true, 1, 1), 0.0999755859375f);
  EXPECT_TRUE(near(at(true, 1, 3), 65504.0f, 65504)) << at(true, 1, 3);
  EXPECT_TRUE(near(at(true, 0, 0), 1.0f, 4)) << at(true, 0, 0);
  EXPECT_TRUE(near(at(false, 0, 2), -3.0f, 4)) << at(false, 0, 2);
  EXPECT_TRUE(near(at(false, 1, 3), -8.0f, 8)) << at(false, 1, 3);
  EXPECT_EQ(view.k_scales != nullptr, kernels::KvTypeHasScales(type));
  const kernels::KvView view1 = (*kv)->View(1, 1);
  EXPECT_EQ(view1.k_head_stride, 8);
  EXPECT_EQ((*kv)->SequenceLength(1), 3);
  EXPECT_EQ((*kv)->SequenceLength(0), 0);
}

INSTANTIATE_TEST_SUITE_P(Types, ContiguousKvCacheTypeTest,
                         ::testing::Values(KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kFp8E4M3,
                                           KvType::kInt8),
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

// Each position keeps its own scale: a large row written next to a small
// one (same group) leaves the small one's scale and codes as they were, and a
// position rewritten after Truncate gets the new row's scale.
TEST(ContiguousKvCacheTest, ScalesArePerPosition) {
  auto kv = ContiguousKvCache::Create(Spec(), 1, 40, KvType::kFp8E4M3);
  ASSERT_TRUE(kv.ok());
  Batch b;
  for (int i = 0; i < 20; ++i) b.Add(0, i, 0, false);
  ASSERT_TRUE((*kv)->Prepare(b).ok());
  const float big[8] = {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
  const float small[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  (*kv)->WriteK(0, 0, 0, small);
  (*kv)->WriteK(0, 0, 1, big);
  (*kv)->WriteK(0, 0, 17, big);
  kernels::KvView view = (*kv)->View(0, 0);
  const int bs = view.block_size;
  EXPECT_EQ(bs, kernels::kKvScaleGroup);
  const uint8_t e_small = kernels::KvScaleByte(KvType::kFp8E4M3, 0.5f);
  const uint8_t e_big = kernels::KvScaleByte(KvType::kFp8E4M3, 1000.0f);
  EXPECT_EQ(view.k_scales[0][0], e_small);
  EXPECT_EQ(view.k_scales[0][1], e_big);
  EXPECT_EQ(view.k_scales[1][1], e_big);
  EXPECT_EQ(kernels::Fp8E4M3ToFloat(static_cast<const uint8_t*>(view.k_blocks[0])[0]) * kernels::KvScaleValue(e_small), 0.5f);
  (*kv)->Truncate(0, 17);
  b.Clear();
  b.Add(0, 17, 0, false);
  ASSERT_TRUE((*kv)->Prepare(b).ok());
  (*kv)->WriteK(0, 0, 17, small);
  view = (*kv)->View(0, 0);
  EXPECT_EQ(view.k_scales[1][1], e_small);
  EXPECT_EQ(view.k_scales[0][0], e_small);  // kept
  // Head 1 of position 0 sits one block_size further in the head-major bytes.
  EXPECT_EQ(view.k_scales[0][bs + 0], e_small);
}

TEST(ContiguousKvCacheTest, RejectsBadSizes) {
  EXPECT_FALSE(ContiguousKvCache::Create(Spec(), 0, 4).ok());
  EXPECT_FALSE(ContiguousKvCache::Create(KvCacheSpec{}, 1, 4).ok());
  EXPECT_EQ(ContiguousKvCache::Create(Spec(), 1 << 30, 1 << 30).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace pagoda
