// IntegrityTracker: KV page integrity. Every sequence records the (block id,
// integrity tag) pairs it was given (allocation, prefix-cache adoption,
// copy-on-write replacement; truncation drops the tail). Before each engine
// step one batched Check compares the record of every scheduled sequence
// with its live block table and the pool: the same block ids in the same
// order, each block still held (ref_count > 0) and still carrying the tag it
// had when the sequence took it. A block freed and handed out again, retagged
// or moved into another sequence's table fails the check, and the engine
// stops that sequence instead of letting it read (or write) another
// request's cache.
//
// Two implementations chosen once at construction (MakeIntegrityTracker):
// `off` is a null object whose methods do nothing, `check` keeps the record.
// A failed sequence is released by its record, not by its table
// (Releasable): only the blocks it still provably holds go back to the pool,
// so a corrupted table can never release a block another sequence owns.
// Owned by the paged KV cache. Engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/block_pool.h"
#include "kv/block_table.h"

namespace pagoda::kv {

enum class IntegrityMode : uint8_t { kOff, kCheck };
// "off" | "check"; nullopt for anything else.
std::optional<IntegrityMode> ParseIntegrityMode(std::string_view s);
const char* IntegrityModeName(IntegrityMode m);

// What the check found wrong with one sequence (the first bad entry).
struct IntegrityFailure {
  int32_t seq = -1;
  int32_t index = -1;             // position in the block table; -1: the lengths differ
  BlockId recorded = kNoBlock;    // what the sequence was given
  uint32_t recorded_tag = 0;
  BlockId live = kNoBlock;        // what its table holds now
  uint32_t live_tag = 0;          // the pool's tag of `live` now
  int32_t live_ref_count = 0;
  // One line for the log: ids, tags and ref counts only (never tokens).
  std::string Describe() const;
};

class IntegrityTracker {
 public:
  virtual ~IntegrityTracker() = default;
  virtual IntegrityMode mode() const = 0;

  // Record keeping, called by the paged KV cache as it changes a table.
  virtual void OnAppend(int32_t seq, BlockId b, uint32_t tag) = 0;
  virtual void OnReplace(int32_t seq, int32_t index, BlockId b, uint32_t tag) = 0;
  virtual void OnTruncate(int32_t seq, int32_t n_blocks) = 0;

  // The batched check of `seqs` against their live tables (`tables[seq]`,
  // indexed by sequence id) and the pool; appends one failure per bad
  // sequence. Appends nothing when off.
  virtual void Check(std::span<const int32_t> seqs, std::span<const BlockTable* const> tables, const BlockPool& pool,
                     std::vector<IntegrityFailure>* failures) const = 0;
  // The recorded blocks of `seq` it still holds (held, same tag): the only
  // ones a failed sequence may release. Off: the table itself.
  virtual void Releasable(int32_t seq, const BlockTable& table, const BlockPool& pool,
                          std::vector<BlockId>* out) const = 0;
};

std::unique_ptr<IntegrityTracker> MakeIntegrityTracker(IntegrityMode mode, int32_t n_seq_max);

// The Status a sequence stopped by the check ends with (DataLoss with a fixed
// prefix), and the test for it that the server maps to HTTP 500
// "kv_cache_integrity".
Status IntegrityError(const IntegrityFailure& failure);
bool IsIntegrityError(const Status& status);

}  // namespace pagoda::kv
