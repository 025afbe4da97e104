#include "base/compute_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "base/compute_peak_internal.h"

namespace pagoda {
namespace {

bool HasAvx2Fma() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// Operations per second of `loop` on every thread of the pool, best pass;
// each pass runs `iters` iterations per thread (ops_per_iter each).
template <class Loop>
double BestRate(ThreadPool& pool, int32_t passes, int64_t iters, double ops_per_iter, Loop loop) {
  std::atomic<int64_t> sink{0};
  pool.Run([&](int, int) { sink += static_cast<int64_t>(loop(iters / 8)); });  // warm the clocks
  double best = 0;
  for (int32_t p = 0; p < passes; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.Run([&](int, int) { sink += static_cast<int64_t>(loop(iters)); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, ops_per_iter * static_cast<double>(iters) * pool.size() / s);
  }
  return sink.load() == 42 ? best + 0 : best;
}

}  // namespace

ComputePeak MeasureComputePeak(ThreadPool& pool, int32_t passes) {
  ComputePeak peak;
  peak.n_threads = pool.size();
  if (!HasAvx2Fma() || passes < 1) return peak;
  // ~20 ms per pass at a few GHz.
  constexpr int64_t kIters = 8 << 20;
  peak.f32_fma_flops = BestRate(pool, passes, kIters, 10 * 8 * 2, internal::FmaLoopAvx2);
  peak.int8_ops = BestRate(pool, passes, kIters, 10 * 32 * 2, internal::MaddubsLoopAvx2);
  return peak;
}

}  // namespace pagoda
