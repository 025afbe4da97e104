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
// bounded queue (kv/write_behind_queue.h; a full queue drops the block and
// counts it); Contains and Get may be called from any thread. Thread-safe.
// Stats: `blocks` / `bytes` are the files indexed now, `deleted` the files
// removed by the size bound.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "kv/block_file.h"
#include "kv/kv_tier.h"

namespace pagoda::kv {

struct DiskTierOptions {
  std::string dir;              // created if missing
  int64_t max_bytes = 0;        // > 0: bound on the files' total size
  BlockLayout layout;           // of this engine's pool
  int32_t max_queued = 64;      // blocks waiting for the writer; more are dropped
};

class DiskTier final : public KvTier {
 public:
  // Errors: InvalidArgument (empty dir, max_bytes < one record, bad layout),
  // an I/O error creating or scanning the directory.
  static Result<std::unique_ptr<DiskTier>> Open(const DiskTierOptions& options);
  ~DiskTier() override;  // writes what is queued, then stops the writer
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  std::string_view name() const override { return "disk"; }
  const BlockLayout& layout() const override;
  // False when not queued: queue full, or the hash is stored or queued already.
  bool Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
           const void* payload) override;
  // Whether `hash` is stored (or queued: Get serves a queued block from its
  // queued copy, without waiting for the writer).
  bool Contains(const BlockHash& hash) const override;
  // NotFound when not stored; DataLoss / FailedPrecondition /
  // InvalidArgument (the file is deleted) when its file does not verify.
  Result<BlockRecord> Get(const BlockHash& hash, void* payload) override;
  void Flush() override;
  KvTierStats stats() const override;
  void TakeRemoved(std::vector<BlockHash>* out) override;
  void TakeOpened(std::vector<BlockRecord>* out) override;
  void WillNeed(const BlockHash& hash) override;

 private:
  struct Impl;
  explicit DiskTier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kv
