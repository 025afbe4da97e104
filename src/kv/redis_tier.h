// RedisTier: the shared offload tier (tier 2) of the KV cache. Evicted full
// prefix-cache blocks go to one Redis server that every replica of a model
// reads and writes, so a conversation that comes back on another replica
// still finds its prefix. One string key per block:
//   pagoda:kv:<model fingerprint, 16 hex>:<block hash, 32 hex>
// The block hash already folds in the tenant's cache salt (kv/block_hash.h),
// so keys are namespaced by model (fingerprint) and by salt: another model
// or another tenant never finds a block. The value is the block's whole
// record (kv/block_file.h: header, tokens, payload, checksum), so Get
// verifies what it reads; a record that fails (checksum, header, another
// fingerprint or layout, wrong size, filed under another hash, not a
// string) is deleted, counted in `corrupt` and returned as an error, never
// served.
//
// Writes: Put only copies the block into the write-behind queue
// (kv/write_behind_queue.h; full: dropped and counted). The writer thread
// (pagoda-kv-redis) first refreshes the key's TTL (PEXPIRE), which also
// tells whether another replica stored the block already, and otherwise
// SETs the record with PX = ttl_ms.
// Bound: Redis's own `maxmemory` with `allkeys-lru` is the operator's
// bound (every key also has the TTL); this tier keeps no byte budget.
//
// Redis down: a command fails within the timeouts, and the client then fails
// every command at once, without touching the network, for retry_after_ms:
// Put drops (counted), Contains is false, Get is an IoError; the first
// command after the pause tries again, so the tier recovers by itself when
// Redis is back. A call on the engine thread waits at most about
// 2 * timeout_ms (a stale pooled connection is retried once on a new one).
//
// Contains asks Redis (EXISTS) unless the block is queued or in a bounded
// local set of hashes this process wrote or saw stored. That set is a hint
// only (the key may have expired or been evicted since, and a miss in it
// still asks Redis, since other replicas write too); a Get that finds
// nothing drops the hash from it.
//
// Stats: `blocks` / `bytes` are the hashes in that local set (written or
// seen stored by this process), not Redis's key count; `deleted` stays 0
// (Redis evicts on its own, uncounted here); `dropped` counts Put calls
// refused (queue full, already queued, Redis unavailable) and queued blocks
// not written (Redis failed, or the block was stored already).
//
// Thread-safe. Put is the engine thread's; Contains and Get may be called
// from any thread.
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

struct RedisTierOptions {
  std::string url;                        // redis://[[user]:password@]host[:port][/db]
  BlockLayout layout;                     // of this engine's pool
  int64_t ttl_ms = 24 * 3'600'000;        // PX of every write; refreshed when the block is put again
  int64_t timeout_ms = 200;               // connect and I/O timeout of each command
  int64_t retry_after_ms = 1'000;         // after a failure, commands fail at once this long
  int32_t max_queued = 64;                // blocks waiting for the writer; more are dropped
  int32_t pool_size = 4;                  // connections (the writer's, and readers')
  int32_t max_known = 65'536;             // local set of hashes known stored (Contains hint)
};

class RedisTier final : public KvTier {
 public:
  // Errors: InvalidArgument (bad URL, bad layout or options), IoError when
  // Redis does not answer a PING (the caller decides whether to run without
  // the tier). Warns when Redis has no maxmemory, or would refuse writes
  // once full (noeviction).
  static Result<std::unique_ptr<RedisTier>> Open(const RedisTierOptions& options);
  ~RedisTier() override;  // writes what is queued (or gives up on it), then stops the writer
  RedisTier(const RedisTier&) = delete;
  RedisTier& operator=(const RedisTier&) = delete;

  std::string_view name() const override { return "redis"; }
  const BlockLayout& layout() const override;
  // False when not queued: queue full, the hash queued already, or Redis
  // unavailable (within retry_after_ms of a failure).
  bool Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
           const void* payload) override;
  // False when Redis is unavailable (unless the block is still queued here).
  bool Contains(const BlockHash& hash) const override;
  // NotFound when no such key; IoError when Redis does not answer;
  // DataLoss / FailedPrecondition / InvalidArgument (the key is deleted)
  // when its value does not verify.
  Result<BlockRecord> Get(const BlockHash& hash, void* payload) override;
  void Flush() override;
  KvTierStats stats() const override;

  // The Redis key of a block: "pagoda:kv:<fingerprint>:<hash>".
  std::string KeyOf(const BlockHash& hash) const;

 private:
  struct Impl;
  explicit RedisTier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kv
