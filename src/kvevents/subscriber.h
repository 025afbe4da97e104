// Subscriber: reads the KV event stream of one replica (a Pagoda
// `serve --kv-events`, or vLLM with --kv-events-config) and hands each batch
// to a callback in sequence order, exactly once, rebuilding what it missed
// from the replica's replay socket.
//
//  - SUB connects to `endpoint` (topic filter `topic`, exact match checked).
//  - Late join: on Start, and after a publisher restart, it asks the replay
//    socket (DEALER, vLLM's request [“”, start seq]) for every buffered batch
//    and applies them before the live ones.
//  - Gaps: a live seq past last+1 triggers a replay from last+1; seqs
//    already applied (live copies of replayed batches) are skipped.
//  - Lost for good (dropped by the publisher, older than its replay buffer,
//    no replay socket, replay timed out): the callback first gets a
//    synthetic batch [AllBlocksCleared] under the next seq, then the stream
//    goes on. The view restarts empty rather than keeping blocks whose
//    BlockRemoved may be among the lost batches.
//  - Publisher restart: the live stream of one publisher only ever goes up,
//    so a live seq at or below the last live seq means a new publisher; the
//    callback gets a synthetic [AllBlocksCleared] and the new stream is
//    rebuilt from its replay buffer. (A restart whose first batch seen is
//    already past the old stream's last seq looks like a gap instead; its
//    replay then holds the new stream's batches, so the view stays a
//    superset of the truth until the next AllBlocksCleared.)
//  - Malformed frames or payloads are dropped and counted, never fatal.
//
// Threads: the callback runs on the subscriber's own thread; Start / Stop /
// stats from any other thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "kvevents/kv_event.h"

namespace pagoda::kvevents {

struct SubscriberOptions {
  std::string endpoint;         // the publisher's PUB, e.g. "tcp://10.0.0.5:5557"
  std::string replay_endpoint;  // its ROUTER; empty: no replay (every gap resets)
  std::string topic;            // vLLM's default ""
  std::chrono::milliseconds replay_timeout{2000};
};

struct SubscriberStats {
  int64_t received = 0;   // live messages
  int64_t applied = 0;    // batches handed to the callback (synthetic resets excluded)
  int64_t malformed = 0;  // bad frames or payloads, live or replayed
  int64_t gaps = 0;       // live seq past last + 1
  int64_t replays = 0;    // replay requests sent
  int64_t resets = 0;     // synthetic AllBlocksCleared delivered (lost batches or restarts)
};

using BatchCallback = std::function<void(uint64_t seq, EventBatch&& batch)>;

class Subscriber {
 public:
  // InvalidArgument when an endpoint does not parse.
  static Result<std::unique_ptr<Subscriber>> Create(const SubscriberOptions& options, BatchCallback callback);
  ~Subscriber();  // Stop()
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  void Start();
  void Stop();  // joins the thread; no callback after it returns
  SubscriberStats stats() const;

 private:
  struct Impl;
  explicit Subscriber(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kvevents
