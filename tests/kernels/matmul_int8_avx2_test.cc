// The AVX2 int8 panel (src/kernels/cpu/matmul_int8_avx2.cc) against the
// scalar reference, and its fused small-batch kernel bitwise against it
// (batch invariance of every ISA: matmul_batch_invariance_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize.h"
#include "kernels/matmul_test_support.h"

namespace pagoda::kernels {
namespace {

bool HasAvx2() { return static_cast<int>(DetectedIsa()) >= static_cast<int>(Isa::kAvx2); }

std::vector<float> RandomActs(int64_t n_tokens, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n_tokens * n_in);
  for (auto& v : x) v = dist(rng);
  // A few large activations: blocks with very different scales.
  for (int64_t i = 0; i < n_tokens * n_in; i += 97) x[i] *= 30.0f;
  return x;
}

// Both kernels (kPanel: the per-call panel; kGemv: the fused kernel reading
// the weight rows), every token count 1..67 (token tiles and their tails),
// row counts that leave partial 8-row groups and partial row chunks.
using PanelParam = std::tuple<DType, BatchPath, int64_t /*n_tokens*/, int64_t /*n_out*/>;

class MatMulInt8Avx2Test : public ::testing::TestWithParam<PanelParam> {};

TEST_P(MatMulInt8Avx2Test, PanelMatchesReference) {
  if (!HasAvx2()) GTEST_SKIP() << "no AVX2";
  const auto [type, path, n_tokens, n_out] = GetParam();
  // 7 blocks; K-quants: 3 super-blocks (the per-32 bound holds for them too:
  // their panel rounds activations per 32-block).
  const int64_t n_in = GetDTypeInfo(type).block_size == 256 ? 768 : 224;
  std::vector<uint8_t> storage;
  const TensorView w = MakeWeight(type, n_out, n_in, 77, storage);
  const std::vector<float> x = RandomActs(n_tokens, n_in, static_cast<uint32_t>(n_tokens));
  std::vector<float> got(n_tokens * n_out, NAN);
  ThreadPool pool(2);
  {
    IsaGuard isa(Isa::kAvx2);
    BatchPathGuard path_guard(path);
    MatMul(w, x.data(), n_tokens, got.data(), pool);
  }
  // The panel rounds activations per 32-block, also for K-quant weights.
  ExpectNearMatMulReference(w, x.data(), n_tokens, got.data(),
                            std::string(DTypeName(type)) + " " + BatchPathName(path), /*act_block=*/32);
}

std::vector<int64_t> TokenCounts() {
  std::vector<int64_t> v;
  for (int64_t n = 1; n <= 67; ++n) v.push_back(n);
  return v;
}

std::string PanelParamName(const ::testing::TestParamInfo<PanelParam>& info) {
  const auto [type, path, n_tokens, n_out] = info.param;
  return std::string(DTypeName(type)) + "_" + BatchPathName(path) + "_t" + std::to_string(n_tokens) + "_r" +
         std::to_string(n_out);
}

INSTANTIATE_TEST_SUITE_P(PanelTypes, MatMulInt8Avx2Test,
                         ::testing::Combine(::testing::Values(DType::kQ4_0, DType::kQ8_0, DType::kQ4_1, DType::kQ5_0,
                                                              DType::kQ4_K, DType::kQ5_K, DType::kQ6_K),
                                            ::testing::Values(BatchPath::kPanel, BatchPath::kGemv),
                                            ::testing::ValuesIn(TokenCounts()), ::testing::Values<int64_t>(5, 37, 100)),
                         PanelParamName);

// The fused kernel and the panel are one arithmetic: bitwise equal outputs
// for every token count, partial groups included (kAuto picks between them
// by n_tokens, so batch invariance rests on this).
TEST(MatMulInt8Avx2Test, FusedKernelMatchesPanelBitwise) {
  if (!HasAvx2()) GTEST_SKIP() << "no AVX2";
  ThreadPool pool(2);
  IsaGuard isa(Isa::kAvx2);
  for (const DType type : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_1, DType::kQ5_0, DType::kQ4_K, DType::kQ5_K,
                           DType::kQ6_K}) {
    for (const int64_t n_out : {3, 8, 37, 100}) {
      const int64_t n_in = GetDTypeInfo(type).block_size == 256 ? 512 : 320;
      std::vector<uint8_t> storage;
      const TensorView w = MakeWeight(type, n_out, n_in, 21, storage);
      for (const int64_t n_tokens : {1, 2, 3, 4, 5, 8, 13, 33, 64}) {
        const std::vector<float> x = RandomActs(n_tokens, n_in, 3);
        std::vector<float> fused(n_tokens * n_out, NAN), panel(n_tokens * n_out, NAN);
        {
          BatchPathGuard path(BatchPath::kGemv);
          MatMul(w, x.data(), n_tokens, fused.data(), pool);
        }
        {
          BatchPathGuard path(BatchPath::kPanel);
          MatMul(w, x.data(), n_tokens, panel.data(), pool);
        }
        ASSERT_EQ(0, std::memcmp(fused.data(), panel.data(), fused.size() * sizeof(float)))
            << DTypeName(type) << " n_out " << n_out << " n_tokens " << n_tokens;
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
