// WriteBehindQueue: the bounded queue between the engine thread, which
// hands over evicted KV blocks, and a tier's writer thread, which stores
// them. Push only copies the block (into a buffer reused from an earlier
// entry where one is spare) and returns; a full queue refuses the block
// rather than make the engine wait. The writer calls the tier's write
// function for each block in order, without the queue's lock held; a block
// stays queued (Contains, CopyQueued) until that call returns, so a block
// is always findable in the queue or in the tier.
//
// Owns the writer thread: the destructor writes what is queued, then joins
// it. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kv/block_file.h"
#include "kv/block_hash.h"

namespace pagoda::kv {

// A block waiting for the writer: the pool block's bytes and its identity.
struct QueuedBlock {
  BlockHash hash;
  BlockHash parent;
  std::vector<int32_t> tokens;   // [block_size]
  std::vector<uint8_t> payload;  // [block_bytes]
};

class WriteBehindQueue {
 public:
  // Runs on the writer thread, once per block, in push order.
  using WriteFn = std::function<void(const QueuedBlock&)>;

  // Starts the writer thread, named `thread_name` (at most 15 characters).
  // `capacity` >= 1 blocks may wait, the one being written included.
  WriteBehindQueue(const std::string& thread_name, int32_t capacity, WriteFn write);
  ~WriteBehindQueue();
  WriteBehindQueue(const WriteBehindQueue&) = delete;
  WriteBehindQueue& operator=(const WriteBehindQueue&) = delete;

  // Copies the block in (`payload`: the pool block's bytes). False when the
  // queue is full or holds `hash` already.
  bool Push(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
            std::span<const uint8_t> payload);
  bool Contains(const BlockHash& hash) const;
  // Copies a queued block's payload into `payload` ([block bytes]) and
  // returns its record; nullopt when `hash` is not queued.
  std::optional<BlockRecord> CopyQueued(const BlockHash& hash, void* payload) const;
  // Blocks until every block pushed before the call is written.
  void Flush();
  // Blocks queued now, the one being written included.
  int64_t depth() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kv
