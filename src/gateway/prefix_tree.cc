#include "gateway/prefix_tree.h"

#include <algorithm>
#include <list>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/check.h"

namespace pagoda::gateway {

namespace {

struct Tag {
  uint32_t replica;
  PrefixTree::Clock::time_point at;
};

struct Node {
  std::vector<Tag> tags;
  std::list<uint64_t>::iterator lru;  // into State::lru
};

}  // namespace

struct PrefixTree::State {
  size_t max_nodes;
  mutable std::shared_mutex mu;
  std::unordered_map<uint64_t, Node> nodes;
  std::list<uint64_t> lru;  // front: most recently inserted
  std::map<std::string, uint32_t, std::less<>> ids;
  uint32_t next_id = 0;
  int64_t evictions = 0;

  uint32_t Intern(std::string_view replica) {
    auto it = ids.find(replica);
    if (it == ids.end()) it = ids.emplace(std::string(replica), next_id++).first;
    return it->second;
  }

  void Touch(uint64_t h, uint32_t replica, Clock::time_point now) {
    auto [it, inserted] = nodes.try_emplace(h);
    Node& n = it->second;
    if (inserted) {
      lru.push_front(h);
    } else {
      lru.splice(lru.begin(), lru, n.lru);
    }
    n.lru = lru.begin();
    auto tag = std::find_if(n.tags.begin(), n.tags.end(), [&](const Tag& t) { return t.replica == replica; });
    if (tag == n.tags.end()) {
      n.tags.push_back({replica, now});
    } else {
      tag->at = now;
    }
  }

  void Evict() {
    while (nodes.size() > max_nodes && !lru.empty()) {
      nodes.erase(lru.back());
      lru.pop_back();
      ++evictions;
    }
  }
};

PrefixTree::PrefixTree(size_t max_nodes) : state_(std::make_unique<State>()) {
  PAGODA_CHECK(max_nodes > 0) << "PrefixTree needs a node budget";
  state_->max_nodes = max_nodes;
}

PrefixTree::~PrefixTree() = default;

void PrefixTree::Insert(std::span<const uint64_t> chain, std::string_view replica, Clock::time_point now) {
  if (chain.empty()) return;
  std::unique_lock lock(state_->mu);
  const uint32_t id = state_->Intern(replica);
  // Tail first, so that the head ends most recent and is evicted last.
  for (size_t i = chain.size(); i-- > 0;) state_->Touch(chain[i], id, now);
  state_->Evict();
}

void PrefixTree::Match(std::span<const uint64_t> chain, std::span<const std::string_view> replicas,
                       std::span<size_t> out, Clock::time_point now, Clock::duration max_age) const {
  PAGODA_CHECK(out.size() >= replicas.size()) << "PrefixTree::Match: out holds " << out.size() << " of "
                                              << replicas.size();
  std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(replicas.size()), 0);
  std::shared_lock lock(state_->mu);
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> ids(replicas.size(), kNone);
  size_t alive = 0;
  for (size_t i = 0; i < replicas.size(); ++i) {
    auto it = state_->ids.find(replicas[i]);
    if (it != state_->ids.end()) ids[i] = it->second, ++alive;
  }
  for (size_t b = 0; b < chain.size() && alive > 0; ++b) {
    auto node = state_->nodes.find(chain[b]);
    if (node == state_->nodes.end()) break;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] == kNone) continue;
      const auto& tags = node->second.tags;
      auto tag = std::find_if(tags.begin(), tags.end(), [&](const Tag& t) { return t.replica == ids[i]; });
      if (tag != tags.end() && now - tag->at <= max_age) {
        out[i] = b + 1;
      } else {
        ids[i] = kNone;
        --alive;
      }
    }
  }
}

void PrefixTree::RemoveReplica(std::string_view replica) {
  std::unique_lock lock(state_->mu);
  auto it = state_->ids.find(replica);
  if (it == state_->ids.end()) return;
  const uint32_t id = it->second;
  state_->ids.erase(it);
  for (auto n = state_->nodes.begin(); n != state_->nodes.end();) {
    auto& tags = n->second.tags;
    tags.erase(std::remove_if(tags.begin(), tags.end(), [&](const Tag& t) { return t.replica == id; }), tags.end());
    if (tags.empty()) {
      state_->lru.erase(n->second.lru);
      n = state_->nodes.erase(n);
    } else {
      ++n;
    }
  }
}

size_t PrefixTree::size() const {
  std::shared_lock lock(state_->mu);
  return state_->nodes.size();
}

int64_t PrefixTree::evictions() const {
  std::shared_lock lock(state_->mu);
  return state_->evictions;
}

}  // namespace pagoda::gateway
