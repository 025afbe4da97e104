#include "sampling/grammar/token_matcher.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "sampling/grammar/mask_cache.h"
#include "sampling/grammar/mask_walk.h"

namespace pagoda::grammar {
namespace {

void AppendInt(std::string* s, int32_t v) { s->append(reinterpret_cast<const char*>(&v), sizeof(v)); }

}  // namespace

TokenMatcher::TokenMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabIndex> vocab)
    : matcher_(grammar), vocab_(std::move(vocab)) {
  PAGODA_CHECK(vocab_ != nullptr);
  cache_ = vocab_->CacheFor(grammar);
  walker_ = std::make_unique<MaskWalker>(&matcher_.grammar(), vocab_.get());
}

TokenMatcher::~TokenMatcher() = default;
TokenMatcher::TokenMatcher(TokenMatcher&&) noexcept = default;
TokenMatcher& TokenMatcher::operator=(TokenMatcher&&) noexcept = default;

TokenMatcher::TokenMatcher(const TokenMatcher& o)
    : matcher_(o.matcher_), vocab_(o.vocab_), cache_(o.cache_), finished_(o.finished_),
      walker_(std::make_unique<MaskWalker>(&matcher_.grammar(), vocab_.get())) {}

TokenMatcher& TokenMatcher::operator=(const TokenMatcher& o) {
  if (this != &o) *this = TokenMatcher(o);
  return *this;
}

std::string TokenMatcher::CacheKey(int32_t depth, int32_t* cut_tail) const {
  const StackArena& arena = matcher_.arena();
  std::vector<std::vector<int32_t>> stacks;
  stacks.reserve(matcher_.heads().size());
  *cut_tail = 0;
  for (const Head& h : matcher_.heads()) {
    std::vector<int32_t> st{h.pos};
    int32_t p = h.parent;
    int32_t frames = 0;
    while (p >= 0 && frames < depth) {
      st.push_back(arena.node(p).pos);
      p = arena.node(p).parent;
      ++frames;
    }
    if (p >= 0) {
      st.push_back(kStackTruncated);
      *cut_tail = std::max(*cut_tail, arena.node(p).tail);
    } else {
      st.push_back(kStackBottom);
    }
    stacks.push_back(std::move(st));
  }
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  std::string key(1, static_cast<char>(depth));
  for (const auto& st : stacks) {
    for (int32_t v : st) AppendInt(&key, v);
  }
  return key;
}

namespace {

// Rebuilds the cut stacks of a cache key in a fresh arena.
std::vector<Head> HeadsFromKey(const std::string& key, const Grammar& g, StackArena& arena) {
  std::vector<int32_t> vals((key.size() - 1) / sizeof(int32_t));
  std::memcpy(vals.data(), key.data() + 1, vals.size() * sizeof(int32_t));
  std::vector<Head> heads;
  size_t i = 0;
  while (i < vals.size()) {
    size_t j = i;
    while (vals[j] >= 0) ++j;  // vals[j]: the terminator
    int32_t parent = vals[j];
    for (size_t k = j - 1; k > i; --k) {
      const int64_t tail = int64_t{g.min_rest(vals[k] + 1)} + (parent >= 0 ? arena.node(parent).tail : 0);
      parent = arena.Intern(vals[k], parent, static_cast<int32_t>(std::min<int64_t>(tail, Grammar::kInfinite)));
    }
    heads.push_back({vals[i], parent});
    i = j + 1;
  }
  return heads;
}

}  // namespace

// The entry of `key` (cut at `depth`), walking the trie on a miss.
std::shared_ptr<const MaskEntry> TokenMatcher::FindOrWalk(int32_t depth, const std::string& key) {
  if (auto e = cache_->Find(key)) return e;
  auto e = std::make_shared<MaskEntry>();
  e->accepted.assign((static_cast<size_t>(vocab_->vocab_size()) + 63) / 64, 0);
  StackArena arena;
  const std::vector<Head> heads = HeadsFromKey(key, matcher_.grammar(), arena);
  std::vector<std::pair<int32_t, TokenId>> costs;
  walker_->Walk(arena, heads, Grammar::kInfinite, e->accepted.data(), &e->uncertain, &e->max_local_after, &costs);
  std::sort(e->uncertain.begin(), e->uncertain.end());
  // The most common cost, and the tokens with another.
  std::unordered_map<int32_t, int32_t> count;
  for (const auto& [c, t] : costs) ++count[c];
  int32_t best = 0;
  for (const auto& [c, n] : count) {
    if (n > best || (n == best && c < e->mode_cost)) {
      best = n;
      e->mode_cost = c;
    }
  }
  for (const auto& ct : costs) {
    if (ct.first != e->mode_cost) e->cost_exceptions.push_back(ct);
  }
  if (depth != kMaskCacheDepth) cache_->Insert(key, e);
  return e;
}

// The entry of `key` from the entry of the same heads cut shallower: its
// accepted tokens stay accepted (a path inside fewer frames exists in
// more), its rejected ones rejected; its uncertain ones are classified again.
std::shared_ptr<const MaskEntry> TokenMatcher::Derive(const MaskEntry& base, const std::string& key) {
  auto e = std::make_shared<MaskEntry>();
  e->accepted = base.accepted;
  StackArena arena;
  const std::vector<Head> heads = HeadsFromKey(key, matcher_.grammar(), arena);
  // Accepted base tokens cost at most their base cost plus what the frames
  // between the two cuts add.
  int32_t between = 0;
  for (const Head& h : heads) {
    int32_t p = h.parent;
    for (int32_t f = 0; f < kMaskCacheBaseDepth && p >= 0; ++f) p = arena.node(p).parent;
    if (p >= 0) between = std::max(between, arena.node(p).tail);
  }
  auto shift = [&](int32_t c) { return static_cast<int32_t>(std::min<int64_t>(int64_t{c} + between, Grammar::kInfinite)); };
  e->max_local_after = shift(base.max_local_after);
  e->mode_cost = shift(base.mode_cost);
  e->cost_exceptions.reserve(base.cost_exceptions.size());
  for (const auto& [c, t] : base.cost_exceptions) e->cost_exceptions.emplace_back(shift(c), t);
  for (TokenId t : base.uncertain) {
    int32_t cost = 0;
    switch (walker_->Classify(arena, heads, vocab_->bytes(t), &cost)) {
      case MaskWalker::Fate::kAccepted:
        e->accepted[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
        e->max_local_after = std::max(e->max_local_after, cost);
        if (cost != e->mode_cost) e->cost_exceptions.emplace_back(cost, t);
        break;
      case MaskWalker::Fate::kUncertain:
        e->uncertain.push_back(t);
        break;
      case MaskWalker::Fate::kRejected:
        break;
    }
  }
  return e;
}

int32_t TokenMatcher::ComputeMask(TokenBitmask& mask) { return ComputeMask(mask, Grammar::kInfinite); }

int32_t TokenMatcher::ComputeMask(TokenBitmask& mask, int32_t remaining_tokens) {
  if (mask.size() != vocab_->vocab_size()) {
    mask.Resize(vocab_->vocab_size());
  } else {
    mask.ClearAll();
  }
  if (finished_) return 0;
  const int32_t limit = remaining_tokens >= Grammar::kInfinite ? Grammar::kInfinite : remaining_tokens - 1;
  if (matcher_.CanContinue()) {
    int32_t cut_tail = 0;
    const std::string key = CacheKey(kMaskCacheDepth, &cut_tail);
    std::shared_ptr<const MaskEntry> entry = cache_->Find(key);
    if (entry == nullptr) {
      int32_t unused;
      std::shared_ptr<const MaskEntry> base = FindOrWalk(kMaskCacheBaseDepth, CacheKey(kMaskCacheBaseDepth, &unused));
      entry = static_cast<int64_t>(base->uncertain.size()) * kDeriveRatio <= vocab_->vocab_size()
                  ? Derive(*base, key)
                  : FindOrWalk(kMaskCacheDepth, key);
      cache_->Insert(key, entry);
    }
    const int64_t bound = int64_t{entry->max_local_after} + cut_tail;
    if (limit < Grammar::kInfinite && bound > limit) {
      // Tight budget: keep the tokens whose fewest bytes to accept after
      // them, bounded above by in-window cost + cut_tail (exact with one
      // stack), fit in the tokens left.
      if (int64_t{entry->mode_cost} + cut_tail <= limit) {
        std::copy(entry->accepted.begin(), entry->accepted.end(), mask.words().begin());
        for (const auto& [c, t] : entry->cost_exceptions) {
          if (int64_t{c} + cut_tail > limit) mask.Reset(t);
        }
      } else {
        for (const auto& [c, t] : entry->cost_exceptions) {
          if (int64_t{c} + cut_tail <= limit) mask.Set(t);
        }
      }
      StackArena arena = matcher_.arena();
      for (TokenId t : entry->uncertain) {
        int32_t cost;
        if (walker_->Check(arena, matcher_.heads(), vocab_->bytes(t), &cost) && cost <= limit) mask.Set(t);
      }
      if (mask.Count() == 0) {
        // The bound was too loose (several stacks): walk from the real stacks.
        walker_->Walk(arena, matcher_.heads(), limit, mask.words().data(), nullptr, nullptr);
      }
    } else {
      std::copy(entry->accepted.begin(), entry->accepted.end(), mask.words().begin());
      if (!entry->uncertain.empty()) {
        StackArena arena = matcher_.arena();
        for (TokenId t : entry->uncertain) {
          int32_t cost;
          if (walker_->Check(arena, matcher_.heads(), vocab_->bytes(t), &cost) && cost <= limit) mask.Set(t);
        }
      }
    }
  }
  if (matcher_.IsAccepting()) {
    for (TokenId t : vocab_->eog_tokens()) mask.Set(t);
  }
  return mask.Count();
}

bool TokenMatcher::AcceptToken(TokenId id) {
  if (finished_ || id < 0 || id >= vocab_->vocab_size()) return false;
  switch (vocab_->token_class(id)) {
    case TokenClass::kEog:
      if (!matcher_.IsAccepting()) return false;
      finished_ = true;
      return true;
    case TokenClass::kNever:
      return false;
    case TokenClass::kText:
      return matcher_.AcceptBytes(vocab_->bytes(id));
  }
  return false;
}

}  // namespace pagoda::grammar
