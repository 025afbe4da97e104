#include "sampling/grammar/stack_arena.h"

#include <unordered_map>

namespace pagoda::grammar {
namespace {

inline size_t HashPair(int32_t pos, int32_t parent) {
  uint64_t k = (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return static_cast<size_t>(k);
}

}  // namespace

void StackArena::Clear() {
  nodes_.clear();
  slots_.assign(64, 0);
}

void StackArena::Rehash(size_t n_slots) {
  slots_.assign(n_slots, 0);
  const size_t mask = n_slots - 1;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    size_t h = HashPair(nodes_[i].pos, nodes_[i].parent) & mask;
    while (slots_[h] != 0) h = (h + 1) & mask;
    slots_[h] = static_cast<int32_t>(i + 1);
  }
}

int32_t StackArena::Intern(int32_t pos, int32_t parent, int32_t tail) {
  const size_t mask = slots_.size() - 1;
  size_t h = HashPair(pos, parent) & mask;
  while (slots_[h] != 0) {
    const StackNode& n = nodes_[static_cast<size_t>(slots_[h] - 1)];
    if (n.pos == pos && n.parent == parent) return slots_[h] - 1;
    h = (h + 1) & mask;
  }
  const int32_t id = static_cast<int32_t>(nodes_.size());
  const int32_t depth = parent >= 0 ? nodes_[static_cast<size_t>(parent)].depth + 1 : 1;
  nodes_.push_back({pos, parent, tail, depth});
  slots_[h] = id + 1;
  if (nodes_.size() * 2 > slots_.size()) Rehash(slots_.size() * 2);
  return id;
}

void StackArena::Compact(std::vector<Head>& heads) {
  // Parents always have smaller ids than their children, so one pass from
  // the top marks everything reachable and a forward pass renumbers.
  std::vector<int32_t> remap(nodes_.size(), -1);
  for (const Head& h : heads) {
    if (h.parent >= 0) remap[static_cast<size_t>(h.parent)] = 0;
  }
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (remap[i] == 0 && nodes_[i].parent >= 0) remap[static_cast<size_t>(nodes_[i].parent)] = 0;
  }
  std::vector<StackNode> kept;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (remap[i] != 0) continue;
    StackNode n = nodes_[i];
    if (n.parent >= 0) n.parent = remap[static_cast<size_t>(n.parent)];
    remap[i] = static_cast<int32_t>(kept.size());
    kept.push_back(n);
  }
  for (Head& h : heads) {
    if (h.parent >= 0) h.parent = remap[static_cast<size_t>(h.parent)];
  }
  nodes_ = std::move(kept);
  size_t n_slots = 64;
  while (n_slots < nodes_.size() * 2 + 2) n_slots *= 2;
  Rehash(n_slots);
}

}  // namespace pagoda::grammar
