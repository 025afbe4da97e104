// PdaStepper: one byte step of the grammar's pushdown automaton over a set
// of heads (pos, stack) held in a StackArena. Shared by GrammarMatcher and
// the token mask walks. Holds only scratch space; one per user (not shared
// between threads). The grammar must outlive it.
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/grammar/grammar.h"
#include "sampling/grammar/stack_arena.h"

namespace pagoda::grammar {

// A set of (pos, parent) pairs cleared in O(1) (generation stamps).
class PairSet {
 public:
  void Clear();
  bool Insert(int32_t pos, int32_t parent);  // false if present

 private:
  void Grow();
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> stamps_;
  uint32_t gen_ = 1;
  size_t n_ = 0;
};

struct StepFlags {
  bool accepting = false;      // a path completed the root rule
  bool hit_truncated = false;  // a path popped into an unknown caller (kStackTruncated)
};

class PdaStepper {
 public:
  explicit PdaStepper(const Grammar* g) : g_(g) {}

  // Heads of the start state (root's alternatives over an empty stack).
  void Start(StackArena& arena, std::vector<Head>& out, StepFlags* flags);
  // out = the heads after consuming `b` from in[0, n_in). `out` must not alias `in`.
  void Step(StackArena& arena, const Head* in, size_t n_in, uint8_t b, std::vector<Head>& out, StepFlags* flags);

  // Fewest bytes to accept from head h (frames below a cut count 0).
  int32_t Cost(const StackArena& arena, const Head& h) const {
    const int64_t c = int64_t{g_->min_rest(h.pos)} + (h.parent >= 0 ? arena.node(h.parent).tail : 0);
    return c >= Grammar::kInfinite ? Grammar::kInfinite : static_cast<int32_t>(c);
  }
  int32_t TailOf(const StackArena& arena, int32_t parent_pos, int32_t parent) const {
    const int64_t c = int64_t{g_->min_rest(parent_pos + 1)} + (parent >= 0 ? arena.node(parent).tail : 0);
    return c >= Grammar::kInfinite ? Grammar::kInfinite : static_cast<int32_t>(c);
  }
  const Grammar& grammar() const { return *g_; }

 private:
  void Expand(StackArena& arena, std::vector<Head>& out, StepFlags* flags);

  const Grammar* g_;
  PairSet seen_;
  std::vector<Head> work_;
};

}  // namespace pagoda::grammar
