#include "gateway/kv_index.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "base/check.h"
#include "gateway/block_hasher.h"

namespace pagoda::gateway {

namespace {

struct Replica {
  std::unordered_map<std::string, uint64_t> by_engine;  // engine hash -> gateway hash
  // gateway hash -> how many engine blocks name it (two engine blocks with
  // the same tokens, e.g. under different LoRA ids, share one gateway hash).
  std::unordered_map<uint64_t, uint32_t> held;
  KvIndex::ReplicaStats stats;
};

void Release(Replica& r, uint64_t h) {
  auto it = r.held.find(h);
  if (it == r.held.end()) return;
  if (--it->second == 0) r.held.erase(it);
}

size_t Leading(const Replica& r, std::span<const uint64_t> chain) {
  size_t n = 0;
  while (n < chain.size() && r.held.count(chain[n]) != 0) ++n;
  return n;
}

}  // namespace

struct KvIndex::State {
  Options options;
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
};

KvIndex::KvIndex() : KvIndex(Options{}) {}
KvIndex::KvIndex(Options options) : state_(std::make_unique<State>()) { state_->options = options; }
KvIndex::~KvIndex() = default;

void KvIndex::OnStored(std::string_view replica, std::optional<std::string_view> parent_engine_hash,
                       std::span<const std::string> engine_hashes, std::span<const int32_t> token_ids,
                       int block_size, uint64_t scope_digest) {
  std::unique_lock lock(state_->mu);
  Replica& r = state_->Get(replica);
  if (block_size <= 0 || token_ids.size() != engine_hashes.size() * static_cast<size_t>(block_size)) {
    ++r.stats.malformed;
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
    parent = p->second;
  }
  const size_t bs = static_cast<size_t>(block_size);
  for (size_t i = 0; i < engine_hashes.size(); ++i) {
    const uint64_t h = ChainBlockHash(parent, token_ids.subspan(i * bs, bs));
    parent = h;
    auto it = r.by_engine.find(engine_hashes[i]);
    if (it != r.by_engine.end()) {
      // Stored again (possibly with other tokens): the latest event wins.
      if (it->second == h) continue;
      Release(r, it->second);
      it->second = h;
    } else {
      if (r.by_engine.size() >= state_->options.max_blocks_per_replica) {
        r.stats.over_capacity += static_cast<int64_t>(engine_hashes.size() - i);
        break;
      }
      r.by_engine.emplace(engine_hashes[i], h);
    }
    ++r.held[h];
    ++r.stats.stored;
  }
}

void KvIndex::OnRemoved(std::string_view replica, std::span<const std::string> engine_hashes) {
  std::unique_lock lock(state_->mu);
  Replica& r = state_->Get(replica);
  for (const std::string& e : engine_hashes) {
    auto it = r.by_engine.find(e);
    if (it == r.by_engine.end()) {
      ++r.stats.unknown_removed;
      continue;
    }
    Release(r, it->second);
    r.by_engine.erase(it);
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
  return it == state_->replicas.end() ? 0 : Leading(it->second, chain);
}

void KvIndex::MatchedBlocks(std::span<const std::string_view> replicas, std::span<const uint64_t> chain,
                            std::span<size_t> out) const {
  PAGODA_CHECK(out.size() >= replicas.size()) << "MatchedBlocks: out holds " << out.size() << " of "
                                              << replicas.size();
  std::shared_lock lock(state_->mu);
  for (size_t i = 0; i < replicas.size(); ++i) {
    auto it = state_->replicas.find(replicas[i]);
    out[i] = it == state_->replicas.end() ? 0 : Leading(it->second, chain);
  }
}

uint64_t KvIndex::salt() const { return state_->options.salt; }

std::optional<KvIndex::ReplicaStats> KvIndex::Stats(std::string_view replica) const {
  std::shared_lock lock(state_->mu);
  auto it = state_->replicas.find(replica);
  if (it == state_->replicas.end()) return std::nullopt;
  ReplicaStats s = it->second.stats;
  s.blocks = it->second.held.size();
  return s;
}

std::vector<KvIndex::ReplicaStats> KvIndex::AllStats() const {
  std::shared_lock lock(state_->mu);
  std::vector<ReplicaStats> out;
  out.reserve(state_->replicas.size());
  for (const auto& [id, r] : state_->replicas) {
    out.push_back(r.stats);
    out.back().blocks = r.held.size();
  }
  return out;
}

}  // namespace pagoda::gateway
