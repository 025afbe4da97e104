#include "sampling/grammar/pda.h"

namespace pagoda::grammar {
namespace {

inline uint64_t Key(int32_t pos, int32_t parent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
}
inline size_t Mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return static_cast<size_t>(k);
}

}  // namespace

void PairSet::Clear() {
  n_ = 0;
  if (++gen_ == 0) {
    std::fill(stamps_.begin(), stamps_.end(), 0);
    gen_ = 1;
  }
  if (keys_.empty()) {
    keys_.assign(64, 0);
    stamps_.assign(64, 0);
  }
}

void PairSet::Grow() {
  std::vector<uint64_t> old_keys = std::move(keys_);
  std::vector<uint32_t> old_stamps = std::move(stamps_);
  keys_.assign(old_keys.size() * 2, 0);
  stamps_.assign(old_keys.size() * 2, 0);
  const size_t mask = keys_.size() - 1;
  for (size_t i = 0; i < old_keys.size(); ++i) {
    if (old_stamps[i] != gen_) continue;
    size_t h = Mix(old_keys[i]) & mask;
    while (stamps_[h] == gen_) h = (h + 1) & mask;
    keys_[h] = old_keys[i];
    stamps_[h] = gen_;
  }
}

bool PairSet::Insert(int32_t pos, int32_t parent) {
  if (keys_.empty()) Clear();
  if ((n_ + 1) * 2 > keys_.size()) Grow();
  const uint64_t k = Key(pos, parent);
  const size_t mask = keys_.size() - 1;
  size_t h = Mix(k) & mask;
  while (stamps_[h] == gen_) {
    if (keys_[h] == k) return false;
    h = (h + 1) & mask;
  }
  keys_[h] = k;
  stamps_[h] = gen_;
  ++n_;
  return true;
}

void PdaStepper::Expand(StackArena& arena, std::vector<Head>& out, StepFlags* flags) {
  while (!work_.empty()) {
    const Head item = work_.back();
    work_.pop_back();
    if (!seen_.Insert(item.pos, item.parent)) continue;
    const GrammarElement& e = g_->element(item.pos);
    switch (e.kind) {
      case GrammarElement::kBytes:
        out.push_back(item);
        break;
      case GrammarElement::kEnd:
        if (item.parent == kStackBottom) {
          flags->accepting = true;
        } else if (item.parent == kStackTruncated) {
          flags->hit_truncated = true;
        } else {
          const StackNode n = arena.node(item.parent);
          work_.push_back({n.pos + 1, n.parent});
        }
        break;
      case GrammarElement::kRef: {
        // A reference in tail position returns straight to the caller's
        // frame, so it pushes nothing: repetitions (right recursion) keep the
        // stack flat, and a cycle of tail references meets the seen set.
        const int32_t id = g_->element(item.pos + 1).kind == GrammarElement::kEnd
                               ? item.parent
                               : arena.Intern(item.pos, item.parent, TailOf(arena, item.pos, item.parent));
        for (int32_t alt : g_->alternatives(e.arg)) work_.push_back({alt, id});
        break;
      }
    }
  }
}

void PdaStepper::Start(StackArena& arena, std::vector<Head>& out, StepFlags* flags) {
  seen_.Clear();
  out.clear();
  for (int32_t alt : g_->alternatives(g_->root())) work_.push_back({alt, kStackBottom});
  Expand(arena, out, flags);
}

void PdaStepper::Step(StackArena& arena, const Head* in, size_t n_in, uint8_t b, std::vector<Head>& out,
                      StepFlags* flags) {
  seen_.Clear();
  out.clear();
  for (size_t i = 0; i < n_in; ++i) {
    const Head h = in[i];
    if (!g_->byte_set(g_->element(h.pos).arg).Test(b)) continue;
    work_.push_back({h.pos + 1, h.parent});
    Expand(arena, out, flags);
  }
}

}  // namespace pagoda::grammar
