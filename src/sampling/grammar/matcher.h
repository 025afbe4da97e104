// GrammarMatcher: the byte-level state of one sequence inside a Grammar
// (a pushdown automaton run on all parses at once: a set of heads, each a
// grammar position plus its return stack). Copyable (a copy is an
// independent state); one per sequence, used by the thread that owns the
// sequence. The Grammar is shared and must outlive nothing: the matcher
// holds it.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "sampling/grammar/grammar.h"
#include "sampling/grammar/pda.h"
#include "sampling/grammar/stack_arena.h"

namespace pagoda::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // Consumes the bytes if the grammar allows them all in sequence; otherwise
  // returns false and leaves the state unchanged. "" is always accepted.
  bool AcceptBytes(std::string_view bytes);
  // The grammar's root is complete here (the text so far is in the language).
  bool IsAccepting() const { return accepting_; }
  // Some byte may follow.
  bool CanContinue() const { return !heads_.empty(); }
  // Fewest further bytes that reach an accepting state: 0 when accepting.
  int32_t MinBytesToAccept() const;
  // Sets exactly the bytes AcceptBytes would take next (clears the rest).
  void AllowedNextBytes(std::bitset<256>& out) const;

  const Grammar& grammar() const { return *g_; }
  const std::shared_ptr<const Grammar>& grammar_ptr() const { return keep_; }

  // Internal state, for TokenMatcher's walks.
  const StackArena& arena() const { return arena_; }
  const std::vector<Head>& heads() const { return heads_; }

 private:
  std::shared_ptr<const Grammar> keep_;
  const Grammar* g_;
  PdaStepper stepper_;
  StackArena arena_;
  std::vector<Head> heads_;
  bool accepting_ = false;
  int32_t compact_at_ = 1024;  // arena size that triggers dropping unreachable nodes
  std::vector<Head> cur_, next_;  // scratch
};

// Whether `text` is a string of the grammar's language (tests, validators).
bool Accepts(const Grammar& grammar, std::string_view text);

}  // namespace pagoda::grammar
