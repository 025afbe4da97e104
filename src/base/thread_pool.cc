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

// Slots: a Run publishes nth slots (fn(ith, nth) for each ith); the caller and
// the workers claim them from `slots` (generation in the high 32 bits, next
// free slot in the low 32), so a worker that has not woken up by the time the
// caller finishes its own slot does not delay the Run: the caller claims and
// runs that slot itself. Only claimed, running slots are waited for.
struct ThreadPool::Impl {
  int n_threads = 1;
  std::vector<std::thread> workers;

  // Bumped (under mu) once per Run; workers look for a slot when it changes.
  std::atomic<uint64_t> generation{0};
  std::atomic<uint64_t> slots{0};
  std::atomic<int> done{0};
  const std::function<void(int, int)>* job = nullptr;
  bool stop = false;  // guarded by mu

  std::mutex mu;
  std::condition_variable cv;

  // Claims and runs slots of generation g until none is left.
  void RunSlots(uint64_t g) {
    uint64_t v = slots.load(std::memory_order_acquire);
    for (;;) {
      if ((v >> 32) != (g & 0xFFFFFFFFu)) return;
      const int ith = static_cast<int>(v & 0xFFFFFFFFu);
      if (ith >= n_threads) return;
      if (!slots.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      (*job)(ith, n_threads);
      done.fetch_add(1, std::memory_order_acq_rel);
      v = slots.load(std::memory_order_acquire);
    }
  }

  void WorkerLoop() {
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
      RunSlots(g);
    }
  }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
  PAGODA_CHECK(n_threads >= 1) << "n_threads " << n_threads;
  impl_->n_threads = n_threads;
  impl_->workers.reserve(n_threads - 1);
  for (int i = 1; i < n_threads; ++i) {
    impl_->workers.emplace_back([this] { impl_->WorkerLoop(); });
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
  const uint64_t g = s.generation.load(std::memory_order_relaxed) + 1;
  s.job = &fn;
  s.done.store(0, std::memory_order_relaxed);
  // Slot 0 is the caller's; workers of an older generation see a mismatch.
  s.slots.store(((g & 0xFFFFFFFFu) << 32) | 1u, std::memory_order_release);
  {
    // Under the mutex so a worker deciding to sleep cannot miss the bump.
    std::lock_guard<std::mutex> lk(s.mu);
    s.generation.store(g, std::memory_order_release);
  }
  s.cv.notify_all();
  fn(0, s.n_threads);
  s.done.fetch_add(1, std::memory_order_acq_rel);
  s.RunSlots(g);
  for (int i = 0; s.done.load(std::memory_order_acquire) != s.n_threads; ++i) {
    CpuRelax();
    if (i > (1 << 12)) std::this_thread::yield();
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
