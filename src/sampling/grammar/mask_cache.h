// MaskCache: per (grammar, vocabulary) token masks keyed by the matcher's
// heads cut to their top kMaskCacheDepth stack frames. An entry holds the
// tokens that some path accepts within those frames (allowed whatever lies
// below), the tokens whose only live paths pop below the cut (checked per
// step against the real stacks), and the largest in-window
// MinBytesToAccept after an accepted token (for budget-aware masks).
// Thread-safe; shared by every sequence using the grammar with the
// vocabulary. Bounded: when it passes kMaskCacheMaxBytes it starts over.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sampling/grammar/token_bitmask.h"

namespace pagoda::grammar {

inline constexpr int32_t kMaskCacheDepth = 8;
// A miss at kMaskCacheDepth starts from the entry of the same heads cut at
// this depth (shared by every context of, say, a string rule) and only
// re-checks its uncertain tokens, unless they are more than 1/kDeriveRatio
// of the vocabulary (then it walks the trie).
inline constexpr int32_t kMaskCacheBaseDepth = 2;
inline constexpr int32_t kDeriveRatio = 8;
inline constexpr int64_t kMaskCacheMaxBytes = int64_t{256} << 20;

struct MaskEntry {
  std::vector<uint64_t> accepted;   // one bit per token id
  std::vector<TokenId> uncertain;   // depend on the frames below the cut
  int32_t max_local_after = 0;      // max over accepted tokens of the in-window fewest bytes to accept after it
  // The in-window fewest bytes to accept after each accepted token, for
  // budget-aware masks: most tokens share mode_cost, the others are listed.
  int32_t mode_cost = 0;
  std::vector<std::pair<int32_t, TokenId>> cost_exceptions;
  int64_t bytes() const {
    return static_cast<int64_t>(accepted.size() * sizeof(uint64_t) + uncertain.size() * sizeof(TokenId) +
                                cost_exceptions.size() * 8) + 64;
  }
};

class MaskCache {
 public:
  std::shared_ptr<const MaskEntry> Find(const std::string& key);
  void Insert(std::string key, std::shared_ptr<const MaskEntry> entry);

  struct Stats {
    int64_t hits = 0, misses = 0, entries = 0, bytes = 0;
  };
  Stats stats() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const MaskEntry>> map_;
  int64_t bytes_ = 0;
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace pagoda::grammar
