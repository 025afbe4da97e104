#include "sampling/grammar/matcher.h"

#include <algorithm>

namespace pagoda::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : keep_(std::move(grammar)), g_(keep_.get()), stepper_(g_) {
  PAGODA_CHECK(g_ != nullptr);
  StepFlags f;
  stepper_.Start(arena_, heads_, &f);
  accepting_ = f.accepting;
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  if (bytes.empty()) return true;
  cur_ = heads_;
  bool acc = accepting_;
  for (char c : bytes) {
    StepFlags f;
    stepper_.Step(arena_, cur_.data(), cur_.size(), static_cast<uint8_t>(c), next_, &f);
    if (next_.empty() && !f.accepting) return false;  // new arena nodes are unreachable garbage
    cur_.swap(next_);
    acc = f.accepting;
  }
  heads_.swap(cur_);
  accepting_ = acc;
  if (arena_.size() > compact_at_) {
    arena_.Compact(heads_);
    compact_at_ = std::max(1024, 2 * arena_.size());
  }
  return true;
}

int32_t GrammarMatcher::MinBytesToAccept() const {
  if (accepting_) return 0;
  int32_t best = Grammar::kInfinite;
  for (const Head& h : heads_) best = std::min(best, stepper_.Cost(arena_, h));
  return best;
}

void GrammarMatcher::AllowedNextBytes(std::bitset<256>& out) const {
  out.reset();
  ByteSet all;
  for (const Head& h : heads_) {
    const ByteSet& s = g_->byte_set(g_->element(h.pos).arg);
    for (int i = 0; i < 4; ++i) all.bits[i] |= s.bits[i];
  }
  for (int b = 0; b < 256; ++b) {
    if (all.Test(static_cast<uint8_t>(b))) out.set(static_cast<size_t>(b));
  }
}

bool Accepts(const Grammar& grammar, std::string_view text) {
  GrammarMatcher m(std::shared_ptr<const Grammar>(std::shared_ptr<const Grammar>(), &grammar));
  return m.AcceptBytes(text) && m.IsAccepting();
}

}  // namespace pagoda::grammar
