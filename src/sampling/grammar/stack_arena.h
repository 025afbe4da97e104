// StackArena: the return stacks of a grammar matcher as a tree of
// hash-consed nodes, so that equal stacks are equal ids (which dedups the
// matcher's heads) and stacks share their common bottoms. A node is one
// pushed rule reference: the kRef element's position and the node below it.
// Internal to the grammar matchers; one per matcher (or per mask walk), not
// shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pagoda::grammar {

// Parent ids below zero are not nodes.
inline constexpr int32_t kStackBottom = -1;     // the root rule's caller: popping it accepts
inline constexpr int32_t kStackTruncated = -2;  // an unknown caller (mask cache walks)

struct StackNode {
  int32_t pos;     // the kRef element that pushed this frame
  int32_t parent;  // node below, or kStackBottom / kStackTruncated
  int32_t tail;    // fewest bytes to finish this frame and every frame below (after the kRef)
  int32_t depth;   // frames from here to the bottom, this one included
};

// A matcher head: the current kBytes element and the stack above it.
struct Head {
  int32_t pos;
  int32_t parent;
  bool operator==(const Head&) const = default;
};

class StackArena {
 public:
  StackArena() { Clear(); }
  void Clear();
  // The node (pos, parent); `tail` is computed by the caller.
  int32_t Intern(int32_t pos, int32_t parent, int32_t tail);
  const StackNode& node(int32_t id) const { return nodes_[static_cast<size_t>(id)]; }
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }
  // Keeps only the nodes reachable from `heads` (renumbering them in place).
  void Compact(std::vector<Head>& heads);

 private:
  void Rehash(size_t n_slots);

  std::vector<StackNode> nodes_;
  std::vector<int32_t> slots_;  // open addressing: node id + 1, 0 = empty
};

}  // namespace pagoda::grammar
