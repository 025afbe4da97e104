// FairSharePolicy: Virtual Token Counter fair share between tenants
// (Sheng et al., "Fairness in Serving Large Language Models", OSDI 2024),
// weighted, inside strict priority bands, inside strict workload classes.
// docs/SCHEDULING.md.
//
// - One counter per tenant (EngineRequest::tenant; "" is the anonymous
//   tenant) and priority band: each band runs its own VTC, so service a
//   tenant got in a higher band (a provisioned tenant below its reservation)
//   is not repaid by starving its requests in band 0, and its band-0
//   requests share band 0 fairly. Below, "tenant" means such a pair. A
//   tenant is backlogged while it has waiting sequences.
// - When a tenant becomes backlogged its counter is lifted to the smallest
//   counter of the other backlogged tenants of its band (or, with none, to
//   the counter of the band's tenant that last stopped being backlogged):
//   idle time is not banked.
// - A tenant with nothing waiting or running whose counter is at or below
//   that floor is forgotten (its slot is reused): were it to return, it
//   would be lifted to the floor anyway, and the floor never falls. So the
//   state is bounded by the tenants that are active or idle above the floor,
//   not by every tenant ever seen. Idle tenants are checked when they go
//   idle and, for those above the floor then, in a sweep each time the
//   table has doubled since the last one (amortised O(1) per new tenant).
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
// - Preemption for share (ShareVictim): with every slot taken, the waiting
//   head admission would take first (tenant W) may have a running sequence
//   of another tenant V preempted when W runs fewer than its share of the
//   slots (n_slots / the band's tenants with work, at least 1), V runs more
//   than that share, V's counter is not below W's, and both are of the
//   same class and band. The victim's tenant is the one running the most
//   (then the largest counter); within it, the latest arrival. Without it a
//   flooding tenant holding every slot makes the others wait for its
//   requests to finish, however small their counters.
// With one tenant, one class and one priority this is exactly FCFS.
//
// Cost: O(waiting + running + tracked tenants) per ShareVictim call (only
// while every slot is taken and sequences wait), O(waiting) per admission round to group the waiting list by tenant,
// O(tracked tenants) per admitted sequence and per sequence that ends, O(1)
// per sampled token (the tenant's slot is cached in Sequence::policy_slot;
// it is looked up again by id each time the sequence joins the waiting list).
// Engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/scheduler_policy.h"

namespace pagoda {

struct FairShareOptions {
  double prompt_token_cost = 1;  // w_p (VTC's default)
  double output_token_cost = 2;  // w_q (VTC's default)
  // Preempt a running sequence of a tenant over its share of the slots for
  // a waiting one of a tenant under it (see above).
  bool preempt_for_share = true;
  // Forget idle tenants at or below the floor (see above). Off keeps every
  // tenant ever seen; the decisions are the same either way (tests compare).
  bool forget_idle_tenants = true;
  // The first sweep of idle tenants comes when a new tenant finds this many
  // tracked and no free slot; each later one when the table has doubled.
  size_t first_sweep_at = 64;
};

class FairSharePolicy final : public SchedulerPolicy {
 public:
  explicit FairSharePolicy(const FairShareOptions& options = FairShareOptions())
      : options_(options), sweep_at_(options.first_sweep_at) {}

  bool AdmitBefore(const Sequence& a, const Sequence& b) const override;
  size_t PickVictim(std::span<const Sequence* const> running) const override;
  bool ComputeBefore(const Sequence& a, const Sequence& b) const override;
  size_t ShareVictim(std::span<const Sequence* const> waiting, std::span<const Sequence* const> running,
                     int32_t n_slots) const override;
  void BeginAdmission(std::span<Sequence* const> waiting) override;
  size_t NextCandidate() override;
  void Admitted(size_t index) override;
  void Passed(size_t index) override;
  void OnWaiting(Sequence& s) override;
  void OnLeave(const Sequence& s, bool was_waiting) override;
  void OnSampled(const Sequence& s) override;

  // The tenant's virtual token counter in a priority band; 0 for a tenant
  // not tracked (never seen, or forgotten: idle at or below the floor).
  // Tests, stats.
  double counter(const std::string& tenant, int32_t priority = 0) const;
  // (tenant, band) pairs with state (active, or idle above the floor). Tests, stats.
  size_t tracked_tenants() const { return slots_.size(); }

 private:
  struct Tenant {
    std::string key;  // SlotKey(tenant id, priority)
    int32_t priority = 0;
    double counter = 0;
    int32_t n_waiting = 0;
    int32_t n_running = 0;
    // Admission round scratch: its waiting sequences in AdmitBefore order.
    std::vector<size_t> queue;
    size_t head = 0;
  };

  // Per priority band: the tenant that last stopped being backlogged, and
  // its counter when it was forgotten (then last_left is -1).
  struct Band {
    int32_t last_left = -1;
    double forgotten_floor = -std::numeric_limits<double>::infinity();
  };

  // Whether waiting head `s` goes before `b` (tenants' heads in an
  // admission round): highest class, then highest priority, then smallest
  // counter, then fewest running, then earliest arrival.
  bool HeadBefore(const Sequence& s, const Sequence& b) const;
  static std::string SlotKey(const std::string& tenant, int32_t priority);
  int32_t SlotOf(Sequence& s);
  // The counter a tenant of band `priority` joining the backlog is lifted
  // to: the smallest counter among the band's backlogged tenants other than
  // `except`, else that of the band's last tenant to leave the backlog;
  // +infinity when there is none yet.
  double Floor(int32_t priority, const Tenant* except) const;
  // Forgets `t` when it has nothing waiting or running and its counter is at
  // or below `floor` (Floor()); true when it did.
  bool MaybeForget(Tenant& t, double floor);
  void Sweep();  // MaybeForget over every tracked tenant
  Tenant& TenantOf(const Sequence& s) { return tenants_[static_cast<size_t>(s.policy_slot)]; }
  const Tenant& TenantOf(const Sequence& s) const { return tenants_[static_cast<size_t>(s.policy_slot)]; }
  void LeaveBacklog(Tenant& t);

  FairShareOptions options_;
  std::vector<Tenant> tenants_;
  std::unordered_map<std::string, int32_t> slots_;  // SlotKey -> index into tenants_
  std::vector<int32_t> free_;  // indices into tenants_ of forgotten tenants, for reuse
  size_t sweep_at_;            // sweep when a new tenant finds no free slot and this many are tracked
  std::map<int32_t, Band> bands_;  // by priority
  // Admission round.
  std::span<Sequence* const> waiting_;
  std::vector<int32_t> active_;  // tenants with sequences in this round
};

}  // namespace pagoda
