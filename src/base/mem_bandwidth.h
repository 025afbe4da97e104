// Memory read bandwidth of this machine, measured the way docs/ANCHORS.md
// measured its anchors: a large buffer (1 GiB by default) summed with AVX2
// loads (SSE2 where AVX2 is absent), every thread of a pool summing its own
// contiguous slice, 64-byte lines, best of several passes. The figure
// `pagoda bench` divides its decode speed by. Allocates and frees the buffer
// per call; call from one thread (it runs the pool).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "base/thread_pool.h"

namespace pagoda {

struct MemBandwidthOptions {
  int64_t bytes = int64_t{1} << 30;  // buffer size; rounded down to whole 64-byte lines per thread
  int32_t passes = 10;                // timed passes; the best is reported
};

struct MemBandwidth {
  double bytes_per_s = 0;  // best pass
  double median_bytes_per_s = 0;
  int32_t n_threads = 0;
  int64_t bytes = 0;  // bytes read per pass
};

// Reads the buffer with every thread of `pool`. InvalidArgument for a buffer
// smaller than one 64-byte line per thread or passes < 1; ResourceExhausted
// when the buffer cannot be allocated.
Result<MemBandwidth> MeasureReadBandwidth(ThreadPool& pool, const MemBandwidthOptions& options = {});

}  // namespace pagoda
