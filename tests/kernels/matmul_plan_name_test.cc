// kernels::PlanName (matmul.h): the kernel MatMul selects, by name, under
// every ISA this machine has and the batch-path overrides.
#include <gtest/gtest.h>

#include <string>

#include "kernels/cpu/matmul.h"

namespace pagoda::kernels {
namespace {

class PlanNameTest : public ::testing::Test {
 protected:
  void TearDown() override {
    SetIsaForTesting(saved_isa_);
    SetBatchPathForTesting(saved_path_);
  }
  bool Use(Isa isa) {
    if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) return false;
    SetIsaForTesting(isa);
    SetBatchPathForTesting(BatchPath::kAuto);
    return true;
  }
  Isa saved_isa_ = ActiveIsa();
  BatchPath saved_path_ = ActiveBatchPath();
};

TEST_F(PlanNameTest, NamesStartWithTheActiveIsa) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (!Use(isa)) continue;
    const std::string prefix = std::string(IsaName(isa)) + "/";
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ8_0,
                    DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
      for (int64_t n : {1, 4, 16, 512}) {
        EXPECT_EQ(std::string(PlanName(t, n, false)).rfind(prefix, 0), 0u)
            << IsaName(isa) << " " << DTypeName(t) << " n=" << n << ": " << PlanName(t, n, false);
      }
    }
  }
}

TEST_F(PlanNameTest, UnsupportedTypeHasNoKernel) {
  EXPECT_STREQ(PlanName(DType::kQ2_K, 1, false), "none");
}

TEST_F(PlanNameTest, ScalarDequantizesEverything) {
  ASSERT_TRUE(Use(Isa::kScalar));
  EXPECT_STREQ(PlanName(DType::kQ4_0, 1, true), "scalar/dequant-f32");
  EXPECT_STREQ(PlanName(DType::kF16, 512, false), "scalar/dequant-f32");
}

TEST_F(PlanNameTest, Avx2GemvForDecodePanelForBatches) {
  if (!Use(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  EXPECT_STREQ(PlanName(DType::kQ4_0, 1, false), "avx2/int8-fused-gemv");
  EXPECT_STREQ(PlanName(DType::kQ4_0, 512, false), "avx2/int8-panel");
  EXPECT_STREQ(PlanName(DType::kQ4_0, 1, true), "avx2/packed-gemv");
  EXPECT_STREQ(PlanName(DType::kQ4_0, 512, true), "avx2/packed-panel");
  EXPECT_STREQ(PlanName(DType::kQ8_0, 16, true), "avx2/packed-gemv");
  EXPECT_STREQ(PlanName(DType::kQ8_0, 32, true), "avx2/packed-panel");
  EXPECT_STREQ(PlanName(DType::kQ4_K, 1, false), "avx2/int8-fused-gemv");
  EXPECT_STREQ(PlanName(DType::kQ4_K, 512, false), "avx2/int8-panel");
  EXPECT_STREQ(PlanName(DType::kQ6_K, 16, false), "avx2/int8-panel");
  EXPECT_STREQ(PlanName(DType::kQ5_K, 4, false), "avx2/int8-fused-gemv");
  EXPECT_STREQ(PlanName(DType::kQ4_K, 8, false), "avx2/int8-fused-gemv");
  EXPECT_STREQ(PlanName(DType::kQ6_K, 4, false), "avx2/int8-panel");
  EXPECT_STREQ(PlanName(DType::kF16, 1, false), "avx2/wide-gemv");
  EXPECT_STREQ(PlanName(DType::kF16, 512, false), "avx2/dequant-f32-gemm");
  SetBatchPathForTesting(BatchPath::kLegacy);
  EXPECT_STREQ(PlanName(DType::kQ8_0, 1, false), "avx2/q8-gemv");
  EXPECT_STREQ(PlanName(DType::kQ8_0, 512, false), "avx2/dequant-f32-gemm");
  EXPECT_STREQ(PlanName(DType::kQ4_K, 1, false), "avx2/q8k-gemv");
}

TEST_F(PlanNameTest, Avx512PackedQ4_0AndOverrides) {
  if (!Use(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 VNNI/BF16";
  EXPECT_STREQ(PlanName(DType::kQ4_0, 1, false), "avx512/int8-fused-gemv");
  EXPECT_STREQ(PlanName(DType::kQ4_0, 512, false), "avx512/int8-panel");
  EXPECT_STREQ(PlanName(DType::kQ4_0, 1, true), "avx512/packed-gemv");
  EXPECT_STREQ(PlanName(DType::kQ4_0, 512, true), "avx512/packed-panel");
  EXPECT_STREQ(PlanName(DType::kQ8_0, 512, true), "avx512/int8-panel");  // no packed layout for Q8_0
  EXPECT_STREQ(PlanName(DType::kQ6_K, 1, false), "avx512/int8-fused-gemv");
  EXPECT_STREQ(PlanName(DType::kF16, 1, false), "avx512/bf16-gemv");
  EXPECT_STREQ(PlanName(DType::kF16, 512, false), "avx512/dequant-bf16-gemm");
  SetBatchPathForTesting(BatchPath::kLegacy);  // the GEMV tiles from before the fused kernels
  EXPECT_STREQ(PlanName(DType::kQ4_0, 1, false), "avx512/vnni-gemv");
  EXPECT_STREQ(PlanName(DType::kQ6_K, 1, false), "avx512/q8k-gemv");
  EXPECT_STREQ(PlanName(DType::kF16, 1, false), "avx512/wide-gemv");
  SetBatchPathForTesting(BatchPath::kGemm);  // does not read packed weights
  EXPECT_STREQ(PlanName(DType::kQ4_0, 512, true), "avx512/dequant-bf16-gemm");
}

}  // namespace
}  // namespace pagoda::kernels
