#include "base/mem_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/mem_bandwidth_internal.h"

namespace pagoda {
namespace {

constexpr int64_t kLine = 64;
// 2 MiB alignment lets the kernel back the buffer with huge pages (fewer TLB
// misses, as a large weight mmap would have with THP).
constexpr size_t kAlign = size_t{2} << 20;

bool HasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

struct FreeBuffer {
  void operator()(uint8_t* p) const { std::free(p); }
};

}  // namespace

namespace internal {

uint64_t SumLinesGeneric(const uint8_t* p, int64_t n_lines) {
  uint64_t acc[8] = {};
  for (int64_t i = 0; i < n_lines; ++i) {
    uint64_t w[8];
    std::memcpy(w, p + i * kLine, kLine);
    for (int j = 0; j < 8; ++j) acc[j] += w[j];
  }
  uint64_t s = 0;
  for (uint64_t a : acc) s += a;
  return s;
}

}  // namespace internal

Result<MemBandwidth> MeasureReadBandwidth(ThreadPool& pool, const MemBandwidthOptions& opt) {
  const int nth = pool.size();
  const int64_t lines_per_thread = opt.bytes / kLine / nth;
  if (lines_per_thread < 1) {
    return InvalidArgument("bandwidth buffer of " + std::to_string(opt.bytes) + " bytes is less than one " +
                           std::to_string(kLine) + "-byte line per thread");
  }
  if (opt.passes < 1) return InvalidArgument("bandwidth passes must be >= 1");
  const int64_t slice = lines_per_thread * kLine;
  const int64_t total = slice * nth;
  const size_t alloc = (static_cast<size_t>(total) + kAlign - 1) / kAlign * kAlign;
  std::unique_ptr<uint8_t, FreeBuffer> buf(static_cast<uint8_t*>(std::aligned_alloc(kAlign, alloc)));
  if (!buf) return ResourceExhausted("cannot allocate " + std::to_string(total) + " bytes for the bandwidth buffer");
  uint8_t* base = buf.get();
  // Each thread writes (first touch: its pages are local to it) its own slice,
  // with non-zero bytes: untouched pages would all map the one zero page and
  // read from cache.
  pool.Run([&](int ith, int) { std::memset(base + ith * slice, 0x5a + ith, static_cast<size_t>(slice)); });

  const auto sum = HasAvx2() ? internal::SumLinesAvx2 : internal::SumLinesGeneric;
  std::atomic<uint64_t> sink{0};  // the sums land here, so the loads stay live
  std::vector<double> rates;
  // One untimed pass first (page-table walks, frequency ramp-up).
  for (int32_t pass = -1; pass < opt.passes; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.Run([&](int ith, int) {
      sink.fetch_add(sum(base + ith * slice, lines_per_thread), std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pass >= 0 && s > 0) rates.push_back(static_cast<double>(total) / s);
  }
  if (rates.empty()) return Internal("bandwidth passes took no measurable time");
  std::sort(rates.begin(), rates.end());
  MemBandwidth bw;
  bw.bytes_per_s = rates.back();
  const size_t n = rates.size();
  bw.median_bytes_per_s = n % 2 ? rates[n / 2] : 0.5 * (rates[n / 2 - 1] + rates[n / 2]);
  bw.n_threads = nth;
  bw.bytes = total;
  return bw;
}

}  // namespace pagoda
