#include "engine/engine_stats.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

TEST(HistogramTest, CountsEachObservationInItsBucket) {
  const double bounds[] = {0.1, 1.0};
  Histogram h(bounds);
  h.Observe(0.05);
  h.Observe(0.1);  // upper bounds are inclusive, as Prometheus le
  h.Observe(0.5);
  h.Observe(7);
  EXPECT_EQ(h.counts, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(h.count, 4);
  EXPECT_DOUBLE_EQ(h.sum, 7.65);
}

TEST(HistogramTest, BucketBoundsAscend) {
  for (auto b : {TtftBuckets(), InterTokenBuckets(), RequestLatencyBuckets()}) {
    for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
  }
}

}  // namespace
}  // namespace pagoda
