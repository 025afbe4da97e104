// KV cache events in vLLM's model (vllm/distributed/kv_events.py): a batch
// of BlockStored / BlockRemoved / AllBlocksCleared, one batch per engine step.
// The engine publishes them (kvevents/publisher.h); the gateway subscribes to
// Pagoda and vLLM replicas alike (kvevents/subscriber.h). Plain values: any
// thread may hold them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace pagoda::kvevents {

// vLLM's ExternalBlockHash: an int (Pagoda, vLLM <= 0.10) or bytes (newer
// vLLM, sha256 digests). Negative ints on the wire are kept as their
// two's-complement uint64 (a hash is an identity, not a number).
class ExternalBlockHash {
 public:
  ExternalBlockHash() = default;
  static ExternalBlockHash FromInt(uint64_t v);
  static ExternalBlockHash FromBytes(std::string b);
  bool is_bytes() const { return is_bytes_; }
  uint64_t int_value() const { return int_; }
  const std::string& bytes() const { return bytes_; }
  bool operator==(const ExternalBlockHash&) const = default;
  struct Hasher {
    size_t operator()(const ExternalBlockHash& h) const;
  };

 private:
  bool is_bytes_ = false;
  uint64_t int_ = 0;
  std::string bytes_;
};

struct BlockStored {
  std::vector<ExternalBlockHash> block_hashes;         // one per full block, in chain order
  std::optional<ExternalBlockHash> parent_block_hash;  // the block before block_hashes[0]; nullopt at the start of a sequence
  std::vector<int32_t> token_ids;                      // block_hashes.size() * block_size tokens
  int32_t block_size = 0;
  std::optional<int64_t> lora_id;
  std::optional<std::string> medium;  // "GPU" in vLLM; Pagoda sends "CPU"
  std::optional<std::string> lora_name;
  bool operator==(const BlockStored&) const = default;
};

struct BlockRemoved {
  std::vector<ExternalBlockHash> block_hashes;
  std::optional<std::string> medium;
  bool operator==(const BlockRemoved&) const = default;
};

struct AllBlocksCleared {
  bool operator==(const AllBlocksCleared&) const = default;
};

using KvEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

struct EventBatch {
  double ts = 0;  // seconds since the Unix epoch (vLLM: time.time())
  std::vector<KvEvent> events;
  std::optional<int32_t> data_parallel_rank;
  bool operator==(const EventBatch&) const = default;
};

// The medium Pagoda's engine reports: its KV cache lives in host memory.
inline constexpr const char* kMediumCpu = "CPU";

}  // namespace pagoda::kvevents
