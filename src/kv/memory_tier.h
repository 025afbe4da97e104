// MemoryTier: host memory below the pool, bounded in bytes, least recently
// used records dropped first. Two writers feed it: the pool's evictions
// (Put, when `--kv-offload memory=SIZE` asks for it) and a prefill replica's
// KV transfer (Insert: whole records received over TCP, kvtransfer/), so a
// decode replica restores a transferred prompt through the same loader path
// as any offloaded prefix (docs/KV_OFFLOAD.md). Records are stored whole
// (kv/block_file.h) and verified again on every Get.
//
// Put encodes on the calling thread (the engine's: one copy of the block
// plus its checksum, no I/O). Thread-safe. Stats: `blocks` / `bytes` are the
// records held now, `deleted` those the size bound dropped.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/block_file.h"
#include "kv/kv_tier.h"

namespace pagoda::kv {

struct MemoryTierOptions {
  int64_t max_bytes = 0;  // >= one record
  BlockLayout layout;     // of this engine's pool
};

class MemoryTier final : public KvTier {
 public:
  // InvalidArgument: max_bytes below one record, or a bad layout.
  static Result<std::unique_ptr<MemoryTier>> Open(const MemoryTierOptions& options);
  ~MemoryTier() override;
  MemoryTier(const MemoryTier&) = delete;
  MemoryTier& operator=(const MemoryTier&) = delete;

  std::string_view name() const override { return "memory"; }
  const BlockLayout& layout() const override;
  // False when the hash is stored already.
  bool Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
           const void* payload) override;
  // Keeps a whole record written elsewhere for this layout, after verifying
  // it (DecodeBlock's errors; nothing kept on any). A record for a hash
  // already held replaces it.
  Status Insert(std::vector<uint8_t>&& record);
  bool Contains(const BlockHash& hash) const override;
  Result<BlockRecord> Get(const BlockHash& hash, void* payload) override;
  void Flush() override {}
  KvTierStats stats() const override;
  void TakeRemoved(std::vector<BlockHash>* out) override;

 private:
  struct Impl;
  explicit MemoryTier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::kv
