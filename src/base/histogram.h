// BucketHistogram: a fixed-bucket Prometheus histogram (cumulative buckets, sum,
// count) for latency-like figures (gateway, control plane). Thread safety: any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace pagoda {

class BucketHistogram {
 public:
  struct Snapshot {
    std::vector<double> bounds;    // upper bounds, ascending
    std::vector<uint64_t> counts;  // per bucket (not cumulative); one more than bounds (+Inf)
    double sum = 0;
    uint64_t count = 0;
  };

  explicit BucketHistogram(std::vector<double> bounds);
  void Observe(double value);
  Snapshot snapshot() const;

  // Upper bounds from 100 us to 1 s, for added latency and event lag.
  static std::vector<double> LatencyBounds();

 private:
  mutable std::mutex mu_;
  Snapshot s_;  // guarded by mu_
};

}  // namespace pagoda
