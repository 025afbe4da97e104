// ThreadPool: a fixed set of worker threads for data-parallel kernels. The
// calling thread takes part as thread 0, so ThreadPool(n) starts n-1 workers.
// Workers spin briefly between jobs (decode steps are ~100 us apart) before
// sleeping. Run() is called by one thread at a time (the engine thread).
#pragma once

#include <functional>
#include <memory>

namespace pagoda {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads >= 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // Runs fn(ith, nth) for ith in [0, nth) concurrently; returns when all are done.
  void Run(const std::function<void(int ith, int nth)>& fn);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Number of hardware threads usable by this process.
int DefaultThreadCount();

}  // namespace pagoda
