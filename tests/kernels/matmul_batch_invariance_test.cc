// Bitwise batch invariance of MatMul on every ISA this CPU runs
// (BatchPath::kAuto, the server's choice): a token's output row must not
// depend on how many tokens share the call or where it sits in the batch,
// for every weight type, with and without the load-time packed copy (the
// server's batch- and cache-invariance rest on it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/matmul_test_support.h"

namespace pagoda::kernels {
namespace {

std::vector<float> RandomActs(int64_t n_tokens, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n_tokens * n_in);
  for (auto& v : x) v = dist(rng);
  for (int64_t i = 0; i < n_tokens * n_in; i += 97) x[i] *= 30.0f;  // blocks of very different scales
  return x;
}

using InvarianceParam = std::tuple<Isa, DType>;

class MatMulBatchInvarianceTest : public ::testing::TestWithParam<InvarianceParam> {};

TEST_P(MatMulBatchInvarianceTest, RowDoesNotDependOnTokenCount) {
  const auto [isa_want, type] = GetParam();
  if (static_cast<int>(isa_want) > static_cast<int>(DetectedIsa())) GTEST_SKIP() << IsaName(isa_want) << " not here";
  const int64_t block = GetDTypeInfo(type).block_size;
  // F32/F16/BF16: a width with a tail after the widest loop.
  const int64_t n_in = block == 256 ? 512 : block == 32 ? 256 : 260;
  const int64_t n_out = 100;  // partial row groups and chunks
  const int64_t kMax = 512;
  std::vector<uint8_t> storage;
  const TensorView raw = MakeWeight(type, n_out, n_in, 5, storage);
  const std::vector<float> x = RandomActs(kMax, n_in, 9);
  ThreadPool pool(2);  // rows are shared out differently for different token counts
  IsaGuard isa(isa_want);
  PackedWeightStore store(pool);
  // The checkpoint's rows, then the load-time packed copy where this ISA has one.
  for (const bool packed : {false, true}) {
    TensorView w = raw;
    if (packed) {
      if (!CanPackWeight(raw)) continue;
      auto p = store.Add(raw);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      w = *p;
    }
    SCOPED_TRACE(packed ? "packed" : "unpacked");
    BatchPathGuard path(BatchPath::kAuto);
    std::vector<float> want(kMax * n_out, NAN);
    MatMul(w, x.data(), kMax, want.data(), pool);
    for (const int64_t n_tokens : {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 23, 24, 25, 31, 64, 67, 100}) {
      std::vector<float> got(n_tokens * n_out, NAN);
      MatMul(w, x.data(), n_tokens, got.data(), pool);
      for (int64_t t = 0; t < n_tokens; ++t) {
        ASSERT_EQ(0, std::memcmp(got.data() + t * n_out, want.data() + t * n_out, n_out * sizeof(float)))
            << DTypeName(type) << " on " << IsaName(isa_want) << ": token " << t << " of " << n_tokens
            << " differs from the same token of " << kMax;
      }
    }
    std::vector<float> one(n_out, NAN);
    for (const int64_t t : {int64_t{0}, int64_t{5}, int64_t{63}, kMax - 1}) {
      MatMul(w, x.data() + t * n_in, 1, one.data(), pool);
      ASSERT_EQ(0, std::memcmp(one.data(), want.data() + t * n_out, n_out * sizeof(float)))
          << DTypeName(type) << " on " << IsaName(isa_want) << ": token " << t
          << " alone differs from it in a batch of " << kMax;
    }
  }
}

std::string InvarianceParamName(const ::testing::TestParamInfo<InvarianceParam>& info) {
  const auto [isa, type] = info.param;
  return std::string(IsaName(isa)) + "_" + DTypeName(type);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, MatMulBatchInvarianceTest,
    ::testing::Combine(::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                       ::testing::Values(DType::kQ4_0, DType::kQ8_0, DType::kQ4_1, DType::kQ5_0, DType::kQ4_K,
                                         DType::kQ5_K, DType::kQ6_K, DType::kF32, DType::kF16, DType::kBF16)),
    InvarianceParamName);


// The AVX2 and AVX-512 int8 kernels are one arithmetic (the same activation
// rounding, exact integer block sums, the same f32 fold), so a quantized
// model gives bitwise the same rows on a Zen 3 and an AVX-512 replica (a
// prefill replica and a decode replica of different CPUs agree).
TEST(MatMulCrossIsaTest, Avx2AndAvx512QuantizedRowsAgreeBitwise) {
  if (DetectedIsa() != Isa::kAvx512) GTEST_SKIP() << "needs AVX-512 (and so AVX2)";
  ThreadPool pool(2);
  for (const DType type : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_1, DType::kQ5_0, DType::kQ4_K, DType::kQ5_K,
                           DType::kQ6_K}) {
    const int64_t n_in = GetDTypeInfo(type).block_size == 256 ? 512 : 256, n_out = 37;
    std::vector<uint8_t> storage;
    const TensorView w = MakeWeight(type, n_out, n_in, 11, storage);
    for (const int64_t n_tokens : {1, 3, 9, 40}) {
      const std::vector<float> x = RandomActs(n_tokens, n_in, 17);
      std::vector<float> a(n_tokens * n_out, NAN), b(n_tokens * n_out, NAN);
      BatchPathGuard path(BatchPath::kAuto);
      {
        IsaGuard isa(Isa::kAvx2);
        MatMul(w, x.data(), n_tokens, a.data(), pool);
      }
      {
        IsaGuard isa(Isa::kAvx512);
        MatMul(w, x.data(), n_tokens, b.data(), pool);
      }
      ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << DTypeName(type) << " n_tokens " << n_tokens;
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
