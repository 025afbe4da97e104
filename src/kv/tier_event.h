// TierEvent: a block entering or leaving one of the KV offload tiers
// (docs/KV_OFFLOAD.md), as the engine reports it in its KV events with the
// tier's medium ("CPU", "DISK", "REDIS"; vLLM's `medium` field, docs/KV_EVENTS.md),
// so a router can credit blocks a replica keeps below its pool.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "kv/block_hash.h"

namespace pagoda::kv {

inline constexpr std::string_view kMediumDisk = "DISK";
inline constexpr std::string_view kMediumRedis = "REDIS";
inline constexpr std::string_view kMediumCpu = "CPU";

// The medium of a tier by its KvTier::name() ("memory", "disk", "redis").
inline std::string_view MediumOfTier(std::string_view name) {
  return name == "redis" ? kMediumRedis : name == "memory" ? kMediumCpu : kMediumDisk;
}

struct TierEvent {
  enum class Kind : uint8_t { kStored, kRemoved };
  Kind kind = Kind::kStored;
  std::string_view medium;
  BlockHash hash;
  BlockHash parent;                  // kStored: the block's parent (a root hash for a first block)
  std::span<const int32_t> tokens;   // kStored: its [block_size] tokens; valid only during the call
  bool first = false;                // kStored: the first block of an unsalted chain (parent is its root)
};
using TierEventSink = std::function<void(const TierEvent&)>;

}  // namespace pagoda::kv
