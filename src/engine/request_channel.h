// RequestChannel: the per-request stream of EngineEvents from the engine
// thread to one consumer (an HTTP handler), plus the consumer's cancel flag.
// Every sequence of the request ends with exactly one final event; once all
// have and the queue is drained, Pop returns nullopt.
// Thread-safe: the engine thread calls Push; any one consumer thread calls
// Pop / TryPop / Cancel; SetNotify from the consumer side.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "engine/engine_request.h"

namespace pagoda {

class RequestChannel {
 public:
  RequestChannel(std::string id, int32_t n_sequences);

  const std::string& id() const { return id_; }

  // Consumer side.
  // Blocks for the next event; nullopt once every sequence has finished and
  // every event was taken.
  std::optional<EngineEvent> Pop();
  // The next event if one is queued.
  std::optional<EngineEvent> TryPop();
  // True once every sequence has finished and the queue is empty.
  bool done() const;
  // Called on the engine thread after each Push (and at once if events are
  // queued): it must only schedule work (post to an executor), never block
  // or call back into the engine.
  void SetNotify(std::function<void()> notify);
  // Asks the engine to stop this request (client gone); the engine releases
  // its KV blocks at the next step boundary and ends each open sequence with
  // a kCancelled event.
  void Cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // Stops one sequence only (its choice ended on a stop string while its
  // siblings go on): released at the next step boundary, ending with a
  // kCancelled event. Out-of-range indices are ignored.
  void CancelSequence(int32_t index);
  bool cancelled(int32_t index) const;

  // Engine thread.
  void Push(EngineEvent event);

 private:
  const std::string id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EngineEvent> events_;
  int32_t n_open_;  // sequences without their final event
  std::function<void()> notify_;
  std::atomic<bool> cancelled_{false};
  const int32_t n_sequences_;
  std::unique_ptr<std::atomic<bool>[]> seq_cancelled_;  // [n_sequences_]
};

using RequestHandle = std::shared_ptr<RequestChannel>;

}  // namespace pagoda
