#include "gateway/kv_index.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "base/check.h"
#include "gateway/block_hasher.h"

namespace pagoda::gateway {

namespace {

constexpr size_t kMedia = 1 + KvIndex::kMaxLowerMedia;  // 0: memory, then the Options' lower tiers

struct Entry {
  uint64_t hash = 0;   // gateway hash
  uint8_t media = 0;   // bit m: held in medium m
};

// How many engine blocks name a gateway hash, per medium (two engine blocks
// with the same tokens, e.g. under different LoRA ids, share one gateway hash).
struct Held {
  std::array<uint32_t, kMedia> n{};
  bool empty() const {
    for (uint32_t c : n) {
      if (c != 0) return false;
    }
    return true;
  }
};

struct Replica {
  std::unordered_map<std::string, Entry> by_engine;  // engine hash -> gateway hash and media
  std::unordered_map<uint64_t, Held> held;
  KvIndex::ReplicaStats stats;
};

void Release(Replica& r, uint64_t h, size_t m) {
  auto it = r.held.find(h);
  if (it == r.held.end() || it->second.n[m] == 0) return;
  --it->second.n[m];
  if (it->second.empty()) r.held.erase(it);
}

void Fill(const Replica& r, KvIndex::ReplicaStats& s) {
  s.blocks = r.held.size();
  s.lower_tier_only = 0;
  for (const auto& [h, held] : r.held) s.lower_tier_only += held.n[0] == 0 ? 1 : 0;
}

void ReleaseAll(Replica& r, const Entry& e) {
  for (size_t m = 0; m < kMedia; ++m) {
    if (e.media & (1u << m)) Release(r, e.hash, m);
  }
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

}  // namespace

struct KvIndex::State {
  Options options;
  std::array<double, kMedia> credit{1.0, 1.0, 1.0, 1.0};
  mutable std::shared_mutex mu;
  std::map<std::string, Replica, std::less<>> replicas;

  Replica& Get(std::string_view id) {
    auto it = replicas.find(id);
    if (it == replicas.end()) {
      it = replicas.emplace(std::string(id), Replica{}).first;
      it->second.stats.replica = it->first;
    }
    it->second.stats.last_update = std::chrono::steady_clock::now();
    return it->second;
  }

  size_t Medium(std::optional<std::string_view> medium) const {
    if (!medium) return 0;
    const size_t n = std::min(options.medium_credit.size(), kMaxLowerMedia);
    for (size_t i = 0; i < n; ++i) {
      if (EqualsIgnoreCase(*medium, options.medium_credit[i].first)) return i + 1;
    }
    return 0;
  }

  // Leading blocks of `chain` held in any medium, and their credit.
  size_t Leading(const Replica& r, std::span<const uint64_t> chain, double* out_credit) const {
    size_t n = 0;
    double c = 0;
    for (; n < chain.size(); ++n) {
      auto it = r.held.find(chain[n]);
      if (it == r.held.end()) break;
      double best = 0;
      for (size_t m = 0; m < kMedia; ++m) {
        if (it->second.n[m] != 0) best = std::max(best, credit[m]);
      }
      c += best;
    }
    if (out_credit != nullptr) *out_credit = c;
    return n;
  }
};

KvIndex::KvIndex() : KvIndex(Options{}) {}
KvIndex::KvIndex(Options options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  const size_t n = std::min(state_->options.medium_credit.size(), kMaxLowerMedia);
  for (size_t i = 0; i < n; ++i) state_->credit[i + 1] = std::clamp(state_->options.medium_credit[i].second, 0.0, 1.0);
}
KvIndex::~KvIndex() = default;

void KvIndex::OnStored(std::string_view replica, std::optional<std::string_view> parent_engine_hash,
                       std::span<const std::string> engine_hashes, std::span<const int32_t> token_ids,
                       int block_size, uint64_t scope_digest, std::optional<std::string_view> medium) {
  std::unique_lock lock(state_->mu);
  Replica& r = state_->Get(replica);
  if (block_size <= 0 || token_ids.size() != engine_hashes.size() * static_cast<size_t>(block_size)) {
    ++r.stats.malformed;
    return;
  }
  const size_t m = state_->Medium(medium);
  const uint8_t bit = static_cast<uint8_t>(1u << m);
  // Blocks the replica holds already (in some medium) only gain this one:
  // an offload tier announces a block as it leaves the pool.
  bool all_known = !engine_hashes.empty();
  for (const std::string& e : engine_hashes) all_known = all_known && r.by_engine.count(e) != 0;
  if (all_known) {
    for (const std::string& e : engine_hashes) {
      Entry& entry = r.by_engine.find(e)->second;
      if ((entry.media & bit) == 0) {
        entry.media |= bit;
        ++r.held[entry.hash].n[m];
      }
      ++r.stats.stored;
    }
    return;
  }
  r.stats.block_size = block_size;
  uint64_t parent = ScopedRoot(state_->options.salt, scope_digest);
  if (parent_engine_hash) {
    auto p = r.by_engine.find(std::string(*parent_engine_hash));
    if (p == r.by_engine.end()) {
      ++r.stats.orphans;
      return;
    }
    parent = p->second.hash;
  }
  const size_t bs = static_cast<size_t>(block_size);
  for (size_t i = 0; i < engine_hashes.size(); ++i) {
    const uint64_t h = ChainBlockHash(parent, token_ids.subspan(i * bs, bs));
    parent = h;
    auto it = r.by_engine.find(engine_hashes[i]);
    if (it != r.by_engine.end()) {
      Entry& entry = it->second;
      if (entry.hash != h) {
        // Stored again with other tokens: the latest event wins, in every medium.
        ReleaseAll(r, entry);
        entry = Entry{h, 0};
      }
      if (entry.media & bit) continue;
      entry.media |= bit;
    } else {
      if (r.by_engine.size() >= state_->options.max_blocks_per_replica) {
        r.stats.over_capacity += static_cast<int64_t>(engine_hashes.size() - i);
        break;
      }
      r.by_engine.emplace(engine_hashes[i], Entry{h, bit});
    }
    ++r.held[h].n[m];
    ++r.stats.stored;
  }
}

void KvIndex::OnRemoved(std::string_view replica, std::span<const std::string> engine_hashes,
                        std::optional<std::string_view> medium) {
  std::unique_lock lock(state_->mu);
  Replica& r = state_->Get(replica);
  const size_t m = state_->Medium(medium);
  const uint8_t bit = static_cast<uint8_t>(1u << m);
  for (const std::string& e : engine_hashes) {
    auto it = r.by_engine.find(e);
    if (it == r.by_engine.end() || (it->second.media & bit) == 0) {
      ++r.stats.unknown_removed;
      continue;
    }
    Release(r, it->second.hash, m);
    it->second.media &= static_cast<uint8_t>(~bit);
    if (it->second.media == 0) r.by_engine.erase(it);
    ++r.stats.removed;
  }
}

void KvIndex::OnCleared(std::string_view replica) {
  std::unique_lock lock(state_->mu);
  Replica& r = state_->Get(replica);
  r.by_engine.clear();
  r.held.clear();
  ++r.stats.cleared;
}

void KvIndex::RemoveReplica(std::string_view replica) {
  std::unique_lock lock(state_->mu);
  auto it = state_->replicas.find(replica);
  if (it != state_->replicas.end()) state_->replicas.erase(it);
}

size_t KvIndex::MatchedBlocks(std::string_view replica, std::span<const uint64_t> chain) const {
  std::shared_lock lock(state_->mu);
  auto it = state_->replicas.find(replica);
  return it == state_->replicas.end() ? 0 : state_->Leading(it->second, chain, nullptr);
}

void KvIndex::MatchedBlocks(std::span<const std::string_view> replicas, std::span<const uint64_t> chain,
                            std::span<size_t> out, std::span<double> credit) const {
  PAGODA_CHECK(out.size() >= replicas.size()) << "MatchedBlocks: out holds " << out.size() << " of "
                                              << replicas.size();
  PAGODA_CHECK(credit.empty() || credit.size() >= replicas.size()) << "MatchedBlocks: credit holds "
                                                                     << credit.size() << " of " << replicas.size();
  std::shared_lock lock(state_->mu);
  for (size_t i = 0; i < replicas.size(); ++i) {
    auto it = state_->replicas.find(replicas[i]);
    double c = 0;
    out[i] = it == state_->replicas.end() ? 0 : state_->Leading(it->second, chain, &c);
    if (!credit.empty()) credit[i] = c;
  }
}

uint64_t KvIndex::salt() const { return state_->options.salt; }

std::optional<KvIndex::ReplicaStats> KvIndex::Stats(std::string_view replica) const {
  std::shared_lock lock(state_->mu);
  auto it = state_->replicas.find(replica);
  if (it == state_->replicas.end()) return std::nullopt;
  ReplicaStats s = it->second.stats;
  Fill(it->second, s);
  return s;
}

std::vector<KvIndex::ReplicaStats> KvIndex::AllStats() const {
  std::shared_lock lock(state_->mu);
  std::vector<ReplicaStats> out;
  out.reserve(state_->replicas.size());
  for (const auto& [id, r] : state_->replicas) {
    out.push_back(r.stats);
    Fill(r, out.back());
  }
  return out;
}

}  // namespace pagoda::gateway
