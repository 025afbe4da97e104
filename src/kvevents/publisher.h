// Publisher: sends EventBatches over ZeroMQ exactly as vLLM's
// ZmqEventPublisher does (vllm/distributed/kv_events.py), so a gateway or any
// vLLM KV-event subscriber reads a Pagoda replica like a vLLM one:
//   PUB    multipart (topic, seq as 8-byte big-endian, msgpack payload)
//   ROUTER replay: request [identity, "", start seq (8 bytes BE)] ->
//          one reply (seq, payload) per buffered batch with seq >= start,
//          then (-1 as 8 bytes, ""); a DEALER that omits the empty delimiter
//          gets replies without it.
// Both endpoints are always BOUND (vLLM binds only wildcard addresses and
// connects otherwise): a Pagoda replica is the stable side and gateways
// connect to it. "tcp://127.0.0.1:*" binds an ephemeral port (endpoint()).
//
// Sequence numbers are assigned in Publish, so a batch dropped because the
// queue is full leaves a gap a subscriber sees (and cannot fill by replay:
// kvevents/subscriber.h resets its view then). The first batch is seq 0, as
// in vLLM; a restarted publisher starts at 0 again.
//
// Threads: Publish from one producer thread at a time (the engine thread);
// it takes a mutex only to move the batch into a bounded queue, wakes
// nobody (a wake-up let the scheduler run the sender inside the call), never
// waits for the network, and drops (counting) when max_queue batches wait.
// One background thread looks every 2 ms: encodes, sends, keeps the last
// buffer_steps payloads and answers replay requests. stats() from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "kvevents/kv_event.h"

namespace pagoda::kvevents {

struct PublisherOptions {
  std::string endpoint = "tcp://*:5557";  // PUB, bound
  std::string replay_endpoint;            // ROUTER, bound; empty: no replay
  std::string topic;                      // vLLM's KVEventsConfig default: ""
  int32_t buffer_steps = 10000;           // batches kept for replay
  int32_t max_queue = 100000;             // batches waiting for the sender before drops
  int32_t hwm = 100000;                   // PUB high-water mark (ZeroMQ drops past it)
  // Set on batches that carry none (vLLM's publisher does the same).
  int32_t data_parallel_rank = 0;
};

struct PublisherStats {
  int64_t published = 0;  // batches sent on PUB
  int64_t dropped = 0;    // batches refused by Publish (queue full)
  int64_t replayed = 0;   // batches re-sent to replay requests
  int64_t replay_requests = 0;
  int64_t malformed_requests = 0;
};

class Publisher {
 public:
  // Binds both endpoints; InvalidArgument naming the endpoint when one does
  // not parse or cannot be bound.
  static Result<std::unique_ptr<Publisher>> Create(const PublisherOptions& options);
  ~Publisher();  // sends what is queued (up to ~1 s), then closes
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  // Producer thread. Queues the batch under the next sequence number; false
  // (and counted) when the queue is full. Never blocks on the network.
  bool Publish(EventBatch batch);
  PublisherStats stats() const;
  // The bound addresses (ephemeral ports resolved), e.g. "tcp://127.0.0.1:40123".
  const std::string& endpoint() const;
  const std::string& replay_endpoint() const;

 private:
  struct Impl;
  explicit Publisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kvevents
