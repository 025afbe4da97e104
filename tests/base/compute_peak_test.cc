#include "base/compute_peak.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "base/compute_peak_internal.h"

namespace pagoda {
namespace {

bool HasAvx2Fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// The timed loops run every iteration they are given: their results against
// a scalar re-computation of the same chains (f32 fma, i16 wrapping adds).
TEST(ComputePeakTest, LoopsComputeWhatTheyClaim) {
  if (!HasAvx2Fma()) GTEST_SKIP() << "no AVX2 + FMA";
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}}) {
    float chains[10];
    for (int i = 0; i < 10; ++i) {
      chains[i] = 0.001f * static_cast<float>(i);
      for (int64_t it = 0; it < n; ++it) chains[i] = std::fmaf(chains[i], 0.999999f, 1e-7f);
    }
    float s = chains[0];
    for (int i = 1; i < 10; ++i) s += chains[i];
    EXPECT_EQ(internal::FmaLoopAvx2(n), s + s) << n;

    int16_t sum = 0;
    for (int i = 0; i < 10; ++i) {
      int16_t a = static_cast<int16_t>(i);
      for (int64_t it = 0; it < n; ++it) a = static_cast<int16_t>(a + 3 * -2 + 3 * -2);
      sum = static_cast<int16_t>(sum + a);
    }
    EXPECT_EQ(internal::MaddubsLoopAvx2(n), 2 * sum) << n;
  }
}

TEST(ComputePeakTest, RatesArePositiveAndFiniteWithAvx2) {
  ThreadPool pool(2);
  const ComputePeak p = MeasureComputePeak(pool, 1);
  EXPECT_EQ(p.n_threads, 2);
  if (!HasAvx2Fma()) {
    EXPECT_EQ(p.f32_fma_flops, 0);
    GTEST_SKIP() << "no AVX2 + FMA: not measured";
  }
  EXPECT_TRUE(std::isfinite(p.f32_fma_flops));
  EXPECT_GT(p.f32_fma_flops, 1e9);
  EXPECT_TRUE(std::isfinite(p.int8_ops));
  EXPECT_GT(p.int8_ops, 1e9);
  EXPECT_EQ(MeasureComputePeak(pool, 0).f32_fma_flops, 0);
}

}  // namespace
}  // namespace pagoda
