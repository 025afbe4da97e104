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
#include <string_view>
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

// One element of a block's extra keys: what besides its tokens went into
// its hash (vLLM: multimodal identifiers, the LoRA name, the raw cache_salt
// string, prompt-embedding hashes). Pagoda sends one: the 64-bit digest of
// the request's cache salt (SaltDigest), as an int.
struct ExtraKey {
  enum class Kind : uint8_t { kInt, kStr, kBytes };
  Kind kind = Kind::kInt;
  uint64_t int_value = 0;  // kInt (a negative int as its two's complement)
  std::string text;        // kStr, kBytes
  static ExtraKey Int(uint64_t v) { return ExtraKey{Kind::kInt, v, {}}; }
  static ExtraKey Str(std::string s) { return ExtraKey{Kind::kStr, 0, std::move(s)}; }
  static ExtraKey Bytes(std::string b) { return ExtraKey{Kind::kBytes, 0, std::move(b)}; }
  bool operator==(const ExtraKey&) const = default;
};
// vLLM's per-block entry: None or a tuple.
using BlockExtraKeys = std::optional<std::vector<ExtraKey>>;

// XXH3-64 (seed 0) of a cache salt's bytes: how the salt of a block appears
// in extra_keys (never the salt itself), and the seed a router chains that
// salt's block hashes with.
uint64_t SaltDigest(std::string_view salt);

struct BlockStored {
  std::vector<ExternalBlockHash> block_hashes;         // one per full block, in chain order
  std::optional<ExternalBlockHash> parent_block_hash;  // the block before block_hashes[0]; nullopt at the start of a sequence
  std::vector<int32_t> token_ids;                      // block_hashes.size() * block_size tokens
  int32_t block_size = 0;
  std::optional<int64_t> lora_id;
  std::optional<std::string> medium;  // "GPU" in vLLM; Pagoda sends "CPU"
  std::optional<std::string> lora_name;
  // nullopt (omitted on the wire) or one entry per block of block_hashes.
  // Pagoda: set on every block stored under a non-empty cache salt, each
  // entry [SaltDigest(salt)].
  std::optional<std::vector<BlockExtraKeys>> extra_keys;
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
