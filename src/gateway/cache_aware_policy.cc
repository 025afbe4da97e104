#include "gateway/cache_aware_policy.h"

#include <algorithm>
#include <vector>

#include "gateway/block_hasher.h"

namespace pagoda::gateway {

namespace {

// Text chains live beside token chains in the same trees; a distinct seed
// keeps a text block from ever matching a token block.
constexpr uint64_t kTextSalt = 0x7465787462797465ull;  // "textbyte"

// Rendezvous weight of (replica, prompt): splitmix64's finaliser over both.
uint64_t Rendezvous(uint64_t id_hash, uint64_t prompt_hash) {
  uint64_t z = id_hash ^ (prompt_hash + 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Score {
  size_t matched = 0;  // blocks the engine would reuse
  double cost = 0;
  uint64_t id_hash = 0;
};

// Cost first (then active requests, then the id's hash); with `locality`
// (shedding load) the longest prefix first.
bool Better(const Score& a, const ReplicaView& ra, const Score& b, const ReplicaView& rb, bool locality) {
  if (locality && a.matched != b.matched) return a.matched > b.matched;
  if (a.cost != b.cost) return a.cost < b.cost;
  if (ra.active_requests != rb.active_requests) return ra.active_requests < rb.active_requests;
  return a.id_hash < b.id_hash;
}

// The candidates that stay when the pool is imbalanced (all when it is not).
std::vector<bool> LoadGuard(std::span<const ReplicaView> c, const CacheAwareOptions& o, bool* imbalanced) {
  int64_t lo = c[0].active_requests, hi = c[0].active_requests;
  for (const ReplicaView& r : c) lo = std::min(lo, r.active_requests), hi = std::max(hi, r.active_requests);
  *imbalanced = hi - lo > o.balance_abs_threshold && static_cast<double>(hi) > o.balance_rel_threshold * lo;
  std::vector<bool> keep(c.size(), true);
  if (*imbalanced) {
    for (size_t i = 0; i < c.size(); ++i) keep[i] = c[i].active_requests <= lo + o.balance_abs_threshold;
  }
  return keep;
}

}  // namespace

struct CacheAwarePolicy::Prompt {
  std::vector<uint64_t> chain;
  int64_t units = 0;        // tokens, or bytes when matched on text
  int64_t block_units = 1;  // units per block
};

CacheAwarePolicy::CacheAwarePolicy(const KvIndex* index, CacheAwareOptions options)
    : index_(index),
      options_(std::move(options)),
      tree_(options_.tree_max_nodes),
      pending_(options_.pending_max_nodes) {}

std::unique_ptr<CacheAwarePolicy> CacheAwarePolicy::Sharing(std::shared_ptr<const KvIndex> index,
                                                             CacheAwareOptions options) {
  auto p = std::make_unique<CacheAwarePolicy>(index.get(), std::move(options));
  p->owned_index_ = std::move(index);
  return p;
}

CacheAwarePolicy::~CacheAwarePolicy() = default;

std::chrono::steady_clock::time_point CacheAwarePolicy::Now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

CacheAwarePolicy::Prompt CacheAwarePolicy::Chain(const RouteInput& in) const {
  Prompt p;
  const int bs = std::max(1, in.block_size);
  const uint64_t salt = ScopedRoot(index_ ? index_->salt() : 0, in.cache_scope_digest);
  if (!in.tokens.empty()) {
    p.chain = ChainedBlockHashes(in.tokens, bs, salt);
    p.units = static_cast<int64_t>(in.tokens.size());
    p.block_units = bs;
  } else if (!in.prompt_text.empty()) {
    const int bytes = bs * std::max(1, options_.text_bytes_per_token);
    p.chain = ChainedTextHashes(in.prompt_text, bytes, salt ^ kTextSalt);
    p.units = static_cast<int64_t>(in.prompt_text.size());
    p.block_units = bytes;
  }
  return p;
}

RouteChoice CacheAwarePolicy::Pick(const RouteInput& input, std::span<const ReplicaView> c) {
  const Prompt p = Chain(input);
  const bool text = input.tokens.empty();
  const size_t n = c.size();
  // Held blocks per candidate: index (or pending) for event-fed ones, the tree for the rest.
  std::vector<std::string_view> ev, ap;
  for (const ReplicaView& r : c) (r.kv_events ? ev : ap).push_back(r.id);
  std::vector<size_t> ev_index(ev.size(), 0), ev_pending(ev.size(), 0), ap_tree(ap.size(), 0);
  std::vector<double> ev_credit(ev.size(), 0.0);
  const auto now = Now();
  if (!p.chain.empty()) {
    if (index_ && !text) index_->MatchedBlocks(ev, p.chain, ev_index, ev_credit);
    pending_.Match(p.chain, ev, ev_pending, now, options_.pending_ttl);
    tree_.Match(p.chain, ap, ap_tree, now);
  }
  // The engine always computes the last prompt token, so at most
  // (units - 1) / block of the prefix is reused (PagedKvCache::AdoptPrefix).
  const size_t usable = p.units > 0 ? static_cast<size_t>((p.units - 1) / p.block_units) : 0;
  std::vector<Score> s(n);
  size_t e = 0, a = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t held;
    double credit;  // blocks of prefill saved: a block held only in a lower tier saves less (KvIndex media)
    if (c[i].kv_events) {
      const bool pending = ev_pending[e] > ev_index[e];
      held = pending ? ev_pending[e] : ev_index[e];
      credit = pending ? static_cast<double>(held) : ev_credit[e];
      ++e;
    } else {
      held = ap_tree[a++];
      credit = static_cast<double>(held);
    }
    s[i].matched = std::min(held, usable);
    credit = std::min(credit, static_cast<double>(usable));
    const double to_compute =
        static_cast<double>(p.units) / static_cast<double>(p.block_units) - credit;
    s[i].cost = to_compute * options_.overlap_weight * c[i].weight +
                static_cast<double>(c[i].active_blocks) * options_.decode_block_weight;
    // Ties (idle replicas, a prefix held nowhere) go by rendezvous on the
    // whole prompt: new prefixes spread over the pool instead of piling on
    // one replica, and one prompt always ties the same way.
    s[i].id_hash = Rendezvous(StableHash(c[i].id), p.chain.empty() ? 0 : p.chain.back());
  }
  bool imbalanced = false;
  const std::vector<bool> keep = LoadGuard(c, options_, &imbalanced);
  size_t best = n;
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) continue;
    if (best == n || Better(s[i], c[i], s[best], c[best], imbalanced)) best = i;
  }
  RouteChoice choice;
  choice.index = best;
  choice.predicted_cached_tokens = static_cast<int64_t>(s[best].matched) * std::max(1, input.block_size);
  return choice;
}

void CacheAwarePolicy::OnDispatched(const RouteInput& input, const ReplicaView& chosen) {
  const Prompt p = Chain(input);
  if (p.chain.empty()) return;
  (chosen.kv_events ? pending_ : tree_).Insert(p.chain, chosen.id, Now());
}

void CacheAwarePolicy::RemoveReplica(std::string_view id) {
  tree_.RemoveReplica(id);
  pending_.RemoveReplica(id);
}

}  // namespace pagoda::gateway
