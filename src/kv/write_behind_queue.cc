#include "kv/write_behind_queue.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include <pthread.h>

#include "base/check.h"

namespace pagoda::kv {
namespace {

// Written entries kept for Push to reuse: enough for a steady stream,
// without holding a burst's worth of block copies forever.
constexpr size_t kMaxSpare = 4;

}  // namespace

struct WriteBehindQueue::Impl {
  WriteFn write;
  int32_t capacity = 0;

  mutable std::mutex mu;
  std::condition_variable work_cv;  // writer: a block was pushed, or stop
  std::condition_variable done_cv;  // Flush: a block was written
  // The writer reads the front entry without the lock and pops it after;
  // nothing else mutates a queued entry, so CopyQueued may read it meanwhile.
  std::deque<QueuedBlock> queue;
  std::vector<QueuedBlock> spare;  // written entries whose buffers Push reuses
  uint64_t pushed = 0;
  uint64_t written = 0;
  bool stop = false;
  std::thread writer;

  const QueuedBlock* Find(const BlockHash& h) const {
    for (const QueuedBlock& b : queue) {
      if (b.hash == h) return &b;
    }
    return nullptr;
  }

  void Loop(const std::string& name) {
    pthread_setname_np(pthread_self(), name.c_str());
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      work_cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and drained
      const QueuedBlock& b = queue.front();
      lock.unlock();
      write(b);
      lock.lock();
      if (spare.size() < kMaxSpare) spare.push_back(std::move(queue.front()));
      queue.pop_front();
      ++written;
      done_cv.notify_all();
    }
  }
};

WriteBehindQueue::WriteBehindQueue(const std::string& thread_name, int32_t capacity, WriteFn write)
    : impl_(std::make_unique<Impl>()) {
  PAGODA_CHECK(capacity >= 1) << "a write-behind queue needs room for a block";
  PAGODA_CHECK(thread_name.size() <= 15) << "thread name '" << thread_name << "' is too long";
  impl_->write = std::move(write);
  impl_->capacity = capacity;
  Impl* p = impl_.get();
  impl_->writer = std::thread([p, thread_name] { p->Loop(thread_name); });
}

WriteBehindQueue::~WriteBehindQueue() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->work_cv.notify_one();
  impl_->writer.join();
}

bool WriteBehindQueue::Push(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
                            std::span<const uint8_t> payload) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (static_cast<int64_t>(m.queue.size()) >= m.capacity || m.Find(hash) != nullptr) return false;
  QueuedBlock b;
  if (!m.spare.empty()) {
    b = std::move(m.spare.back());
    m.spare.pop_back();
  }
  b.hash = hash;
  b.parent = parent;
  b.tokens.assign(tokens.begin(), tokens.end());
  b.payload.assign(payload.begin(), payload.end());
  m.queue.push_back(std::move(b));
  ++m.pushed;
  m.work_cv.notify_one();
  return true;
}

bool WriteBehindQueue::Contains(const BlockHash& hash) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Find(hash) != nullptr;
}

std::optional<BlockRecord> WriteBehindQueue::CopyQueued(const BlockHash& hash, void* payload) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const QueuedBlock* b = impl_->Find(hash);
  if (b == nullptr) return std::nullopt;
  std::memcpy(payload, b->payload.data(), b->payload.size());
  return BlockRecord{b->hash, b->parent, b->tokens};
}

void WriteBehindQueue::Flush() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  const uint64_t target = impl_->pushed;
  impl_->done_cv.wait(lock, [&] { return impl_->written >= target; });
}

int64_t WriteBehindQueue::depth() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int64_t>(impl_->queue.size());
}

}  // namespace pagoda::kv
