#include "base/mem_bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "base/mem_bandwidth_internal.h"

namespace pagoda {
namespace {

TEST(MemBandwidthTest, SmallBufferGivesAPositiveFiniteRate) {
  for (int n : {1, 2}) {
    ThreadPool pool(n);
    MemBandwidthOptions o;
    o.bytes = 8 << 20;
    o.passes = 3;
    auto bw = MeasureReadBandwidth(pool, o);
    ASSERT_TRUE(bw.ok()) << bw.status().ToString();
    EXPECT_TRUE(std::isfinite(bw->bytes_per_s));
    EXPECT_GT(bw->bytes_per_s, 0);
    EXPECT_GT(bw->median_bytes_per_s, 0);
    EXPECT_LE(bw->median_bytes_per_s, bw->bytes_per_s);
    EXPECT_EQ(bw->n_threads, n);
    EXPECT_GT(bw->bytes, 0);
    EXPECT_LE(bw->bytes, o.bytes);
  }
}

// The streaming loops sum the buffer's 64-bit words: both twins against a
// plain word-by-word sum, odd line counts included.
TEST(MemBandwidthTest, SumLinesTwinsMatchAWordSum) {
  constexpr int64_t kLines = 37;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(std::aligned_alloc(64, kLines * 64)),
                                                     &std::free);
  for (int64_t i = 0; i < kLines * 64; ++i) buf.get()[i] = static_cast<uint8_t>((i * 131 + 7) % 251);
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{36}, kLines}) {
    uint64_t want = 0;
    for (int64_t w = 0; w < n * 8; ++w) {
      uint64_t x;
      std::memcpy(&x, buf.get() + w * 8, 8);
      want += x;
    }
    EXPECT_EQ(internal::SumLinesGeneric(buf.get(), n), want) << n;
    if (__builtin_cpu_supports("avx2")) EXPECT_EQ(internal::SumLinesAvx2(buf.get(), n), want) << n;
  }
}

TEST(MemBandwidthTest, OddSizesRoundDownToWholeLinesPerThread) {
  ThreadPool pool(3);
  MemBandwidthOptions o;
  o.bytes = 1000003;
  o.passes = 1;
  auto bw = MeasureReadBandwidth(pool, o);
  ASSERT_TRUE(bw.ok());
  EXPECT_EQ(bw->bytes % (3 * 64), 0);
  EXPECT_GT(bw->bytes, 1000003 - 3 * 64);
}

TEST(MemBandwidthTest, RejectsTinyBuffersAndNoPasses) {
  ThreadPool pool(2);
  MemBandwidthOptions o;
  o.bytes = 64;  // less than a line per thread
  EXPECT_EQ(MeasureReadBandwidth(pool, o).status().code(), StatusCode::kInvalidArgument);
  o.bytes = 1 << 20;
  o.passes = 0;
  EXPECT_EQ(MeasureReadBandwidth(pool, o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pagoda
