#include "sampling/grammar/mask_walk.h"

#include <algorithm>

#include "sampling/grammar/token_matcher.h"

namespace pagoda::grammar {

MaskWalker::MaskWalker(const Grammar* g, const TokenVocabIndex* vocab) : stepper_(g), vocab_(vocab) {
  heads_.resize(static_cast<size_t>(vocab->max_token_bytes()) + 1);
  hit_.resize(heads_.size());
}

void MaskWalker::Walk(StackArena& arena, const std::vector<Head>& start, int32_t cost_limit, uint64_t* accepted,
                      std::vector<TokenId>* uncertain, int32_t* max_after,
                      std::vector<std::pair<int32_t, TokenId>>* costs) {
  const auto& trie = vocab_->trie();
  const auto& toks = vocab_->trie_tokens();
  const int32_t n_nodes = static_cast<int32_t>(trie.size());
  heads_[0] = start;
  hit_[0] = 0;
  int32_t best_after = 0;
  for (int32_t i = 1; i < n_nodes;) {
    const TokenVocabIndex::TrieNode& nd = trie[static_cast<size_t>(i)];
    const size_t d = nd.depth;
    std::vector<Head>& prev = heads_[d - 1];
    std::vector<Head>& cur = heads_[d];
    StepFlags f;
    if (prev.empty()) {
      cur.clear();
    } else {
      stepper_.Step(arena, prev.data(), prev.size(), nd.byte, cur, &f);
    }
    const bool hit = hit_[d - 1] || f.hit_truncated;
    hit_[d] = hit;
    if (cur.empty() && !f.accepting) {
      if (hit && uncertain != nullptr) {
        // Only paths into the unknown frames remain: every token below is uncertain.
        const int32_t end = nd.subtree_end;
        const int32_t tb = nd.tokens_begin;
        const int32_t te = end < n_nodes ? trie[static_cast<size_t>(end)].tokens_begin : static_cast<int32_t>(toks.size());
        uncertain->insert(uncertain->end(), toks.begin() + tb, toks.begin() + te);
      }
      i = nd.subtree_end;
      continue;
    }
    if (nd.tokens_begin < nd.tokens_end) {
      int32_t cost = 0;
      if (!f.accepting) {
        cost = Grammar::kInfinite;
        for (const Head& h : cur) cost = std::min(cost, stepper_.Cost(arena, h));
      }
      if (cost <= cost_limit) {
        for (int32_t k = nd.tokens_begin; k < nd.tokens_end; ++k) {
          const TokenId t = toks[static_cast<size_t>(k)];
          accepted[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
          if (costs != nullptr) costs->emplace_back(cost, t);
        }
        best_after = std::max(best_after, cost);
      }
    }
    ++i;
  }
  if (max_after != nullptr) *max_after = best_after;
}

bool MaskWalker::Check(StackArena& arena, const std::vector<Head>& start, std::string_view bytes,
                       int32_t* cost_after) {
  a_ = start;
  StepFlags f;
  for (char c : bytes) {
    f = StepFlags{};
    stepper_.Step(arena, a_.data(), a_.size(), static_cast<uint8_t>(c), b_, &f);
    if (b_.empty() && !f.accepting) return false;
    a_.swap(b_);
  }
  int32_t cost = 0;
  if (!f.accepting) {
    cost = Grammar::kInfinite;
    for (const Head& h : a_) cost = std::min(cost, stepper_.Cost(arena, h));
  }
  *cost_after = cost;
  return true;
}

MaskWalker::Fate MaskWalker::Classify(StackArena& arena, const std::vector<Head>& start, std::string_view bytes,
                                      int32_t* cost_after) {
  a_ = start;
  StepFlags f;
  bool hit = false;
  for (char c : bytes) {
    f = StepFlags{};
    stepper_.Step(arena, a_.data(), a_.size(), static_cast<uint8_t>(c), b_, &f);
    hit = hit || f.hit_truncated;
    if (b_.empty() && !f.accepting) return hit ? Fate::kUncertain : Fate::kRejected;
    a_.swap(b_);
  }
  int32_t cost = 0;
  if (!f.accepting) {
    cost = Grammar::kInfinite;
    for (const Head& h : a_) cost = std::min(cost, stepper_.Cost(arena, h));
  }
  *cost_after = cost;
  return Fate::kAccepted;
}

}  // namespace pagoda::grammar
