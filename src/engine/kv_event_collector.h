// KvEventCollector: the prefix cache's stored / evicted events of one engine
// step, gathered into one vLLM-style kvevents::EventBatch (docs/KV_EVENTS.md).
// A chain of blocks stored one after another becomes one BlockStored (hashes
// in chain order, the tokens of all of them, the parent of the first);
// consecutive evictions become one BlockRemoved. Block hashes go out as the
// low 64 bits of the engine's XXH3-128 BlockHash (kv/block_hash.h); the
// parent of a chain's first block is nil, as vLLM sends it. Blocks stored
// under a non-empty cache salt carry its digest (kvevents::SaltDigest, never
// the salt) in extra_keys, one [digest] per block, so a router can chain its
// index with the same salt.
// Engine thread only: installed as the prefix cache's event sink.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "kv/prefix_cache.h"
#include "kv/tier_event.h"
#include "kvevents/kv_event.h"

namespace pagoda {

class KvEventCollector {
 public:
  explicit KvEventCollector(int32_t block_size) : block_size_(block_size) {}

  static kvevents::ExternalBlockHash ExternalHash(const kv::BlockHash& h) {
    return kvevents::ExternalBlockHash::FromInt(h.lo);
  }

  // The cache salt of the blocks the next events store (the engine sets it
  // before each sequence commits its blocks).
  void SetSalt(std::string_view salt);
  void Add(const kv::PrefixCacheEvent& e);
  // An offload tier's store or removal, in the tier's medium. A stored
  // block names its parent by hash (the router already knows the block from
  // its pool event and only adds the medium) and carries no salt; a block
  // announced after a restart that starts an unsalted chain (e.first) goes
  // out with a nil parent, as the pool's first blocks do.
  void Add(const kv::TierEvent& e);
  // The whole cache was emptied: what came before in this step is moot.
  void AddCleared();
  bool empty() const { return batch_.events.empty(); }
  // The step's batch, stamped `ts` (seconds since the epoch); empties the collector.
  kvevents::EventBatch Take(double ts);

 private:
  int32_t block_size_;
  void Removed(std::string_view medium, const kv::BlockHash& hash);

  kvevents::EventBatch batch_;
  kv::BlockHash last_stored_;  // the last hash of the trailing BlockStored, if that is the last event
  std::optional<uint64_t> salt_digest_;  // of the current salt; nullopt when it is empty
};

}  // namespace pagoda
