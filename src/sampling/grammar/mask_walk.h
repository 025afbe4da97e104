// MaskWalker: walks a TokenVocabIndex's byte trie from a set of matcher
// heads, stepping the grammar's automaton once per trie edge and skipping a
// subtree at the first byte no head accepts. Internal to TokenMatcher; one
// per matcher (scratch space), engine thread only.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "sampling/grammar/pda.h"
#include "sampling/grammar/token_bitmask.h"

namespace pagoda::grammar {

class TokenVocabIndex;

class MaskWalker {
 public:
  MaskWalker(const Grammar* g, const TokenVocabIndex* vocab);

  // Sets in `accepted` (one bit per token, pre-cleared by the caller) every
  // text token that a head takes whole, with MinBytesToAccept after it <=
  // cost_limit. `uncertain` (may be null) gets the tokens whose only live
  // paths popped into a kStackTruncated frame; *max_after the largest
  // fewest-bytes-to-accept after an accepted token. `arena` may grow.
  // `costs` (may be null) gets (fewest bytes after, token) for every accepted token.
  void Walk(StackArena& arena, const std::vector<Head>& start, int32_t cost_limit, uint64_t* accepted,
            std::vector<TokenId>* uncertain, int32_t* max_after,
            std::vector<std::pair<int32_t, TokenId>>* costs = nullptr);

  // Whether the heads take `bytes` whole; *cost_after: fewest bytes to accept after.
  bool Check(StackArena& arena, const std::vector<Head>& start, std::string_view bytes, int32_t* cost_after);
  // As Check, over cut stacks: kUncertain when only paths into a
  // kStackTruncated frame could take the bytes.
  enum class Fate { kRejected, kAccepted, kUncertain };
  Fate Classify(StackArena& arena, const std::vector<Head>& start, std::string_view bytes, int32_t* cost_after);

 private:
  PdaStepper stepper_;
  const TokenVocabIndex* vocab_;
  std::vector<std::vector<Head>> heads_;  // per trie depth
  std::vector<uint8_t> hit_;              // per depth: a path popped below the cut on the way here
  std::vector<Head> a_, b_;
};

}  // namespace pagoda::grammar
