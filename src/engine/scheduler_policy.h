// SchedulerPolicy: the order in which waiting sequences are admitted and the
// running sequence to preempt when the KV cache runs out. Fair share between
// tenants, workload classes and weights plug in here; the scheduler itself
// only enforces the token budget and the KV cache's limits.
// Engine thread only.
#pragma once

#include <span>

#include "engine/sequence.h"

namespace pagoda {

class SchedulerPolicy {
 public:
  virtual ~SchedulerPolicy() = default;
  // Strict weak order: true when `a` should be admitted before `b`.
  virtual bool AdmitBefore(const Sequence& a, const Sequence& b) const = 0;
  // Index into `running` (non-empty) of the sequence to preempt.
  virtual size_t PickVictim(std::span<const Sequence* const> running) const = 0;
};

// First come, first served: admission by arrival (a preempted sequence keeps
// its arrival, so it goes back ahead of later ones); the victim is the
// lowest-priority sequence, the latest arrival among equals.
class FcfsPolicy final : public SchedulerPolicy {
 public:
  bool AdmitBefore(const Sequence& a, const Sequence& b) const override { return a.arrival < b.arrival; }
  size_t PickVictim(std::span<const Sequence* const> running) const override {
    size_t v = 0;
    for (size_t i = 1; i < running.size(); ++i) {
      const Sequence& s = *running[i];
      const Sequence& best = *running[v];
      if (s.request().priority < best.request().priority ||
          (s.request().priority == best.request().priority && s.arrival > best.arrival)) {
        v = i;
      }
    }
    return v;
  }
};

}  // namespace pagoda
