// SchedulerPolicy: the order in which waiting sequences are admitted and the
// running sequence to preempt when the KV cache runs out. Fair share between
// tenants and weights plug in here (fair_share_policy.h). Both policies rank
// the workload class (EngineRequest::workload_class) first: a higher class
// is admitted first and preempted last. The scheduler enforces the token
// budget, the KV cache's limits and the rest of the class rules (pausing
// lower classes, preempting them for a higher one, the realtime reserve).
// docs/SCHEDULING.md.
//
// An admission round: the scheduler sorts the waiting list by AdmitBefore,
// calls BeginAdmission with it, then repeatedly takes NextCandidate and
// answers Admitted (it now runs) or Passed (it cannot start yet: a sibling
// waiting for its prompt's blocks), and stops at the first candidate that
// does not fit (head of line: no starvation of long prompts). The default
// round walks the sorted list in order; a stateful policy may interleave.
// The On* hooks let a policy keep accounts; they cost nothing by default.
// Engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/sequence.h"

namespace pagoda {

inline WorkloadClass ClassOf(const Sequence& s) { return s.request().workload_class; }

class SchedulerPolicy {
 public:
  static constexpr size_t kNone = SIZE_MAX;
  virtual ~SchedulerPolicy() = default;
  // Strict weak order: true when `a` should be admitted before `b`.
  virtual bool AdmitBefore(const Sequence& a, const Sequence& b) const = 0;
  // Index into `running` (non-empty) of the sequence to preempt.
  virtual size_t PickVictim(std::span<const Sequence* const> running) const = 0;
  // Strict weak order of the running prompts still being computed, for the
  // step's token budget left after the decodes; equals keep their
  // admission order (the default: all equal).
  virtual bool ComputeBefore(const Sequence& /*a*/, const Sequence& /*b*/) const { return false; }

  // Preemption for fair share, asked at the start of a step while no slot
  // is free and sequences wait: the index into `running` of the sequence to
  // preempt so that the one of `waiting` admission would take first can
  // start, or kNone. `waiting` holds the candidates that could start now
  // (not waiting for a sibling); `n_slots` is the number of sequence slots.
  // The default (FCFS) never preempts for fairness.
  virtual size_t ShareVictim(std::span<const Sequence* const> /*waiting*/,
                             std::span<const Sequence* const> /*running*/, int32_t /*n_slots*/) const {
    return kNone;
  }

  // Admission round over `waiting` (sorted by AdmitBefore; valid until the
  // round ends). NextCandidate: an index into it, or kNone when no one is
  // left to try.
  virtual void BeginAdmission(std::span<Sequence* const> waiting) {
    n_waiting_ = waiting.size();
    cursor_ = 0;
  }
  virtual size_t NextCandidate() { return cursor_ < n_waiting_ ? cursor_ : kNone; }
  // The candidate `index` was admitted: it has its slot, and n_computed /
  // n_cached say what it adopted from the prefix cache.
  virtual void Admitted(size_t /*index*/) { ++cursor_; }
  // The candidate `index` stays waiting; try the next one.
  virtual void Passed(size_t /*index*/) { ++cursor_; }

  // `s` joined the waiting list: submitted, or preempted back into it.
  virtual void OnWaiting(Sequence& /*s*/) {}
  // `s` left the waiting list (`was_waiting`) or the running set: finished,
  // cancelled, failed, or preempted (OnWaiting follows).
  virtual void OnLeave(const Sequence& /*s*/, bool /*was_waiting*/) {}
  // A committed step sampled one token for `s`.
  virtual void OnSampled(const Sequence& /*s*/) {}

 private:
  size_t n_waiting_ = 0;
  size_t cursor_ = 0;
};

// First come, first served within a workload class: admission by class,
// then arrival (a preempted sequence keeps its arrival, so it goes back
// ahead of later ones); the victim is of the lowest class, then the lowest
// priority, the latest arrival among equals.
class FcfsPolicy final : public SchedulerPolicy {
 public:
  bool AdmitBefore(const Sequence& a, const Sequence& b) const override {
    if (ClassOf(a) != ClassOf(b)) return ClassOf(a) > ClassOf(b);
    return a.arrival < b.arrival;
  }
  size_t PickVictim(std::span<const Sequence* const> running) const override {
    size_t v = 0;
    for (size_t i = 1; i < running.size(); ++i) {
      const Sequence& s = *running[i];
      const Sequence& best = *running[v];
      if (ClassOf(s) != ClassOf(best)) {
        if (ClassOf(s) < ClassOf(best)) v = i;
        continue;
      }
      if (s.request().priority < best.request().priority ||
          (s.request().priority == best.request().priority && s.arrival > best.arrival)) {
        v = i;
      }
    }
    return v;
  }
};

}  // namespace pagoda
