#include "base/thread_pool.h"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "base/check.h"

namespace pagoda {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// How long an idle worker polls before sleeping on the condvar. Decode issues
// a Run every ~50-200 us, so a worker that spins this long rarely sleeps
// while tokens are flowing, and goes quiet soon after the engine idles.
constexpr auto kSpin = std::chrono::microseconds(300);

}  // namespace

struct ThreadPool::Impl {
  int n_threads = 1;
  std::vector<std::thread> workers;

  // Bumped (under mu) once per Run; workers run the job when it changes.
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  const std::function<void(int, int)>* job = nullptr;
  bool stop = false;  // guarded by mu

  std::mutex mu;
  std::condition_variable cv;

  void WorkerLoop(int ith) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = generation.load(std::memory_order_acquire);
      if (g == seen) {
        const auto deadline = std::chrono::steady_clock::now() + kSpin;
        for (int i = 0;; ++i) {
          g = generation.load(std::memory_order_acquire);
          if (g != seen) break;
          CpuRelax();
          if ((i & 255) == 255 && std::chrono::steady_clock::now() > deadline) break;
        }
        if (g == seen) {
          std::unique_lock<std::mutex> lk(mu);
          cv.wait(lk, [&] { return stop || generation.load(std::memory_order_acquire) != seen; });
          if (stop) return;
          g = generation.load(std::memory_order_acquire);
        }
      }
      seen = g;
      (*job)(ith, n_threads);
      pending.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
  PAGODA_CHECK(n_threads >= 1) << "n_threads " << n_threads;
  impl_->n_threads = n_threads;
  impl_->workers.reserve(n_threads - 1);
  for (int i = 1; i < n_threads; ++i) {
    impl_->workers.emplace_back([this, i] { impl_->WorkerLoop(i); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  for (auto& t : impl_->workers) t.join();
}

int ThreadPool::size() const { return impl_->n_threads; }

void ThreadPool::Run(const std::function<void(int ith, int nth)>& fn) {
  Impl& s = *impl_;
  if (s.n_threads == 1) {
    fn(0, 1);
    return;
  }
  s.job = &fn;
  s.pending.store(s.n_threads - 1, std::memory_order_relaxed);
  {
    // Under the mutex so a worker deciding to sleep cannot miss the bump.
    std::lock_guard<std::mutex> lk(s.mu);
    s.generation.fetch_add(1, std::memory_order_release);
  }
  s.cv.notify_all();
  fn(0, s.n_threads);
  for (int i = 0; s.pending.load(std::memory_order_acquire) != 0; ++i) {
    CpuRelax();
    if (i > (1 << 16)) std::this_thread::yield();
  }
}

int DefaultThreadCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

}  // namespace pagoda
