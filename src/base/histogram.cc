#include "base/histogram.h"

namespace pagoda {

BucketHistogram::BucketHistogram(std::vector<double> bounds) {
  s_.bounds = std::move(bounds);
  s_.counts.assign(s_.bounds.size() + 1, 0);
}

void BucketHistogram::Observe(double value) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t b = 0;
  while (b < s_.bounds.size() && value > s_.bounds[b]) ++b;
  ++s_.counts[b];
  s_.sum += value;
  ++s_.count;
}

BucketHistogram::Snapshot BucketHistogram::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return s_;
}

std::vector<double> BucketHistogram::LatencyBounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0};
}

}  // namespace pagoda
