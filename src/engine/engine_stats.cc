#include "engine/engine_stats.h"

#include <algorithm>

namespace pagoda {
namespace {

constexpr double kTtft[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                            1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
constexpr double kInterToken[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                  0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
constexpr double kRequest[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,    10.0,   15.0, 20.0,
                               30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
constexpr double kIterationTokens[] = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
constexpr double kRequestTokens[] = {1,    2,    5,     10,    20,    50,     100,    200,   500,
                                     1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000};

}  // namespace

std::span<const double> TtftBuckets() { return kTtft; }
std::span<const double> InterTokenBuckets() { return kInterToken; }
std::span<const double> RequestLatencyBuckets() { return kRequest; }
std::span<const double> IterationTokenBuckets() { return kIterationTokens; }
std::span<const double> RequestTokenBuckets() { return kRequestTokens; }

Histogram::Histogram(std::span<const double> upper_bounds)
    : bounds(upper_bounds.begin(), upper_bounds.end()), counts(upper_bounds.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const auto it = std::lower_bound(bounds.begin(), bounds.end(), value);
  ++counts[static_cast<size_t>(it - bounds.begin())];
  sum += value;
  ++count;
}

}  // namespace pagoda
