// DiskTier: the local-disk offload tier (tier 1) of the KV cache. Full
// prefix-cache blocks that the pool evicts are written here by a writer
// thread, one block file (kv/block_file.h) per block under
//   <dir>/<model fingerprint, 16 hex>/<block hash, 32 hex>.kvb
// written to a temporary name and renamed, so a crash never leaves a torn
// file under a block's name. The directory is bounded by max_bytes: past
// it, the least recently used files are deleted. At Open the directory of
// this model is scanned (headers only: layout and fingerprint; a file that
// does not parse or belongs to another layout is deleted), so blocks
// survive a restart. Get reads and verifies a whole record; a block that
// fails (checksum, truncation, mismatch) is deleted and reported, never
// returned.
//
// Put is called on the engine thread and only copies the block into a
// bounded queue (a full queue drops the block and counts it); Contains and
// Get may be called from any thread. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"
#include "kv/block_file.h"

namespace pagoda::kv {

struct DiskTierOptions {
  std::string dir;              // created if missing
  int64_t max_bytes = 0;        // > 0: bound on the files' total size
  BlockLayout layout;           // of this engine's pool
  int32_t max_queued = 64;      // blocks waiting for the writer; more are dropped
};

struct DiskTierStats {
  int64_t blocks = 0;          // files indexed now
  int64_t bytes = 0;           // their total size
  int64_t queued = 0;          // write-back queue depth now
  int64_t writes = 0;          // blocks written
  int64_t write_bytes = 0;
  int64_t dropped = 0;         // Put calls refused (queue full, or already stored)
  int64_t deleted = 0;         // files removed by the size bound
  int64_t hits = 0;            // Get calls that returned a block
  int64_t misses = 0;          // Get calls for a hash not stored
  int64_t corrupt = 0;         // records refused by Get or the startup scan (deleted)
  int64_t read_bytes = 0;      // bytes read by successful Gets
  double read_seconds = 0;     // time those Gets took
  double write_seconds = 0;    // time the writer spent writing
};

class DiskTier {
 public:
  // Errors: InvalidArgument (empty dir, max_bytes < one record, bad layout),
  // an I/O error creating or scanning the directory.
  static Result<std::unique_ptr<DiskTier>> Open(const DiskTierOptions& options);
  ~DiskTier();  // writes what is queued, then stops the writer
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  const BlockLayout& layout() const;
  // Queues a copy of the block (`payload` [layout.block_bytes], `tokens`
  // [block_size]). False when it was not queued (queue full, or the hash is
  // stored or queued already).
  bool Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens, const void* payload);
  // Whether `hash` is stored (or queued: Get serves a queued block from its
  // queued copy, without waiting for the writer).
  bool Contains(const BlockHash& hash) const;
  // Reads the block into `payload` ([layout.block_bytes]) and returns its
  // record. NotFound when not stored; DataLoss / FailedPrecondition /
  // InvalidArgument (the block is deleted) when its file does not verify.
  Result<BlockRecord> Get(const BlockHash& hash, void* payload);
  // Blocks until every queued block is written (tests, shutdown).
  void Flush();
  DiskTierStats stats() const;

 private:
  struct Impl;
  explicit DiskTier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kv
