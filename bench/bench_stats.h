// Small statistics the bench programs share: the median of repeated runs
// (PERFORMANCE.md quotes medians).
#pragma once

#include <algorithm>
#include <vector>

namespace pagoda::bench {

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace pagoda::bench
