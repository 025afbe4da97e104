// FairSharePolicy: Virtual Token Counter fair share between tenants
// (Sheng et al., "Fairness in Serving Large Language Models", OSDI 2024),
// weighted, inside strict priority bands, inside strict workload classes.
// docs/SCHEDULING.md.
//
// - One counter per tenant (EngineRequest::tenant; "" is the anonymous
//   tenant). A tenant is backlogged while it has waiting sequences.
// - When a tenant becomes backlogged its counter is lifted to the smallest
//   counter of the other backlogged tenants (or, with none, to the counter of
//   the tenant that last stopped being backlogged): idle time is not banked.
// - Admission: the highest workload class first, then the highest priority
//   (provisioned before serverless); within a class and priority, the head
//   of the tenant with the smallest counter (on a tie, the tenant running
//   fewer sequences: a tenant just lifted to a flooding one's counter goes
//   first, then the earliest head); within a tenant, by class, priority,
//   then arrival. Each admission adds prompt_token_cost x the prompt tokens
//   it must compute (not those adopted from the prefix cache; nothing again
//   after a preemption) / the request's weight; each sampled token adds
//   output_token_cost / weight.
// - Prompts being computed share the budget a step has after its decodes
//   in the same order: higher priority, then smaller counter (admission
//   order among equals), so a flooding tenant's long prompts do not hold
//   back another's. (They are all of one class: the scheduler pauses lower
//   classes while a higher class has prompt work.)
// - Preemption victim: the lowest class, then the lowest priority, then the
//   tenant with the largest counter, then the latest arrival.
// With one tenant, one class and one priority this is exactly FCFS.
//
// Cost: O(waiting) per admission round to group the waiting list by tenant,
// O(backlogged tenants) per admitted sequence, O(1) per sampled token (the
// tenant's slot is cached in Sequence::policy_slot). Engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/scheduler_policy.h"

namespace pagoda {

struct FairShareOptions {
  double prompt_token_cost = 1;  // w_p (VTC's default)
  double output_token_cost = 2;  // w_q (VTC's default)
};

class FairSharePolicy final : public SchedulerPolicy {
 public:
  explicit FairSharePolicy(const FairShareOptions& options = FairShareOptions()) : options_(options) {}

  bool AdmitBefore(const Sequence& a, const Sequence& b) const override;
  size_t PickVictim(std::span<const Sequence* const> running) const override;
  bool ComputeBefore(const Sequence& a, const Sequence& b) const override;
  void BeginAdmission(std::span<Sequence* const> waiting) override;
  size_t NextCandidate() override;
  void Admitted(size_t index) override;
  void Passed(size_t index) override;
  void OnWaiting(Sequence& s) override;
  void OnLeave(const Sequence& s, bool was_waiting) override;
  void OnSampled(const Sequence& s) override;

  // The tenant's virtual token counter; 0 for a tenant never seen. Tests, stats.
  double counter(const std::string& tenant) const;

 private:
  struct Tenant {
    std::string id;
    double counter = 0;
    int32_t n_waiting = 0;
    int32_t n_running = 0;
    // Admission round scratch: its waiting sequences in AdmitBefore order.
    std::vector<size_t> queue;
    size_t head = 0;
  };

  int32_t SlotOf(Sequence& s);
  Tenant& TenantOf(const Sequence& s) { return tenants_[static_cast<size_t>(s.policy_slot)]; }
  const Tenant& TenantOf(const Sequence& s) const { return tenants_[static_cast<size_t>(s.policy_slot)]; }
  void LeaveBacklog(Tenant& t);

  FairShareOptions options_;
  std::vector<Tenant> tenants_;
  std::unordered_map<std::string, int32_t> slots_;  // tenant id -> index into tenants_
  int32_t last_left_ = -1;  // the tenant that last stopped being backlogged
  // Admission round.
  std::span<Sequence* const> waiting_;
  std::vector<int32_t> active_;  // tenants with sequences in this round
};

}  // namespace pagoda
