// TierLoader: reads a request's prefix blocks from the KV offload tiers on a
// thread of its own, before the request is admitted, so that a cold disk or
// a Redis round trip never stalls the engine thread (and the running
// streams it steps). docs/KV_OFFLOAD.md "Restore".
//
// The engine thread asks for a chain (Request: the tokens of the blocks
// after those the pool holds, and the parent hash they continue); the
// loader hashes each block, reads it from the first tier that holds it,
// verifies its record (checksum, header, and that the record names the same
// parent and tokens) into a staging buffer, and stops at the first block it
// cannot read. The engine thread polls (State) and, once ready, takes the
// staged blocks (Take) and copies them into pool blocks at admission.
//
// Reads run ahead: the chain's blocks are hinted to their tier (WillNeed)
// before the first is read, so a cold disk serves them in parallel.
//
// Staging is bounded: a request stages at most max_staged_bytes / 2, and a
// finished request that is never taken (its request was cancelled while it
// waited) is dropped once more than max_ready requests are ready.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv/block_file.h"
#include "kv/block_hash.h"
#include "kv/kv_tier.h"

namespace pagoda::kv {

struct StagedBlock {
  BlockHash hash;
  BlockHash parent;
  std::vector<uint8_t> payload;  // [block_bytes]
  int32_t tier = 0;              // index of the tier it came from
};

struct TierLoaderOptions {
  int32_t block_size = 16;
  size_t block_bytes = 0;
  int64_t max_staged_bytes = int64_t{256} << 20;
  size_t max_ready = 64;
};

struct TierLoaderStats {
  int64_t requests = 0;        // chains asked for
  int64_t blocks = 0;          // blocks staged
  int64_t bytes = 0;           // their payload bytes
  int64_t failures = 0;        // blocks that were indexed but did not read or verify (the chain stopped there)
  int64_t dropped = 0;         // ready chains never taken, dropped at max_ready
  double seconds = 0;          // loader time spent reading
};

class TierLoader {
 public:
  enum class State { kNone, kPending, kReady };

  // `tiers`: searched in order for each block; they must outlive the loader.
  TierLoader(std::vector<KvTier*> tiers, TierLoaderOptions options);
  ~TierLoader();  // abandons queued requests, waits for the one in progress
  TierLoader(const TierLoader&) = delete;
  TierLoader& operator=(const TierLoader&) = delete;

  // Starts loading the chain whose first block holds tokens[0, block_size)
  // after `parent`, at most tokens.size() / block_size blocks. A key already
  // known is replaced.
  void Request(uint64_t key, std::span<const int32_t> tokens, const BlockHash& parent);
  State state(uint64_t key) const;
  // The staged chain of a ready key, in chain order (empty when none could
  // be read, or the key is not ready); forgets the key.
  std::vector<StagedBlock> Take(uint64_t key);
  void Cancel(uint64_t key);
  // Gives taken blocks' buffers back for reuse (kept up to a bound): the
  // next chains read into memory already faulted in.
  void Recycle(std::vector<StagedBlock>&& blocks);
  size_t pending() const;      // requests not finished yet
  size_t outstanding() const;  // requests pending or ready (not taken nor cancelled)
  TierLoaderStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kv
