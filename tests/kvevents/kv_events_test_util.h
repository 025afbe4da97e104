// Helpers for the kvevents tests: sample batches and a thread-safe record
// of what a Subscriber delivered.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "kvevents/kv_event.h"

namespace pagoda::kvevents::testing {

// A batch that names itself by ts (tag) and stores `n_blocks` blocks.
inline EventBatch TaggedBatch(double tag, int n_blocks = 1, int block_size = 4) {
  EventBatch b;
  b.ts = tag;
  BlockStored st;
  for (int i = 0; i < n_blocks; ++i) st.block_hashes.push_back(ExternalBlockHash::FromInt(static_cast<uint64_t>(tag * 1000) + i));
  for (int i = 0; i < n_blocks * block_size; ++i) st.token_ids.push_back(i);
  st.block_size = block_size;
  st.medium = kMediumCpu;
  b.events.push_back(std::move(st));
  return b;
}

inline bool IsReset(const EventBatch& b) {
  return b.events.size() == 1 && std::holds_alternative<AllBlocksCleared>(b.events[0]);
}

class Recorder {
 public:
  void Add(uint64_t seq, EventBatch&& b) {
    {
      std::lock_guard lock(mu_);
      got_.emplace_back(seq, std::move(b));
    }
    cv_.notify_all();
  }
  // Waits until pred(got) holds; false on timeout.
  bool WaitFor(const std::function<bool(const std::vector<std::pair<uint64_t, EventBatch>>&)>& pred,
               std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(got_); });
  }
  bool WaitForCount(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return WaitFor([n](const auto& g) { return g.size() >= n; }, timeout);
  }
  std::vector<std::pair<uint64_t, EventBatch>> got() {
    std::lock_guard lock(mu_);
    return got_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<uint64_t, EventBatch>> got_;
};

}  // namespace pagoda::kvevents::testing
