#include "base/mem_bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>

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
