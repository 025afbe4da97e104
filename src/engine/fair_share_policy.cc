#include "engine/fair_share_policy.h"

#include <algorithm>
#include <limits>

namespace pagoda {

int32_t FairSharePolicy::SlotOf(Sequence& s) {
  if (s.policy_slot >= 0) return s.policy_slot;
  auto [it, inserted] = slots_.try_emplace(s.request().tenant, static_cast<int32_t>(tenants_.size()));
  if (inserted) {
    tenants_.emplace_back();
    tenants_.back().id = s.request().tenant;
  }
  s.policy_slot = it->second;
  return s.policy_slot;
}

bool FairSharePolicy::AdmitBefore(const Sequence& a, const Sequence& b) const {
  // Each tenant's own order; NextCandidate interleaves the tenants.
  if (ClassOf(a) != ClassOf(b)) return ClassOf(a) > ClassOf(b);
  if (a.request().priority != b.request().priority) return a.request().priority > b.request().priority;
  return a.arrival < b.arrival;
}

bool FairSharePolicy::ComputeBefore(const Sequence& a, const Sequence& b) const {
  if (a.request().priority != b.request().priority) return a.request().priority > b.request().priority;
  return TenantOf(a).counter < TenantOf(b).counter;
}

size_t FairSharePolicy::PickVictim(std::span<const Sequence* const> running) const {
  size_t v = 0;
  for (size_t i = 1; i < running.size(); ++i) {
    const Sequence& s = *running[i];
    const Sequence& best = *running[v];
    if (ClassOf(s) != ClassOf(best)) {
      if (ClassOf(s) < ClassOf(best)) v = i;
      continue;
    }
    const int32_t ps = s.request().priority;
    const int32_t pb = best.request().priority;
    if (ps != pb) {
      if (ps < pb) v = i;
      continue;
    }
    const double cs = TenantOf(s).counter;
    const double cb = TenantOf(best).counter;
    if (cs > cb || (cs == cb && s.arrival > best.arrival)) v = i;
  }
  return v;
}

void FairSharePolicy::BeginAdmission(std::span<Sequence* const> waiting) {
  for (int32_t t : active_) {
    tenants_[static_cast<size_t>(t)].queue.clear();
    tenants_[static_cast<size_t>(t)].head = 0;
  }
  active_.clear();
  waiting_ = waiting;
  for (size_t i = 0; i < waiting.size(); ++i) {
    Tenant& t = TenantOf(*waiting[i]);
    if (t.queue.empty()) active_.push_back(waiting[i]->policy_slot);
    t.queue.push_back(i);
  }
}

size_t FairSharePolicy::NextCandidate() {
  // The tenants' heads: highest class, then highest priority, then smallest
  // counter, then fewest running, then earliest arrival.
  size_t best = kNone;
  const Tenant* bt = nullptr;
  for (int32_t ti : active_) {
    const Tenant& t = tenants_[static_cast<size_t>(ti)];
    if (t.head >= t.queue.size()) continue;
    const size_t i = t.queue[t.head];
    if (best != kNone) {
      const Sequence& s = *waiting_[i];
      const Sequence& b = *waiting_[best];
      if (ClassOf(s) != ClassOf(b)) {
        if (ClassOf(s) < ClassOf(b)) continue;
      } else if (s.request().priority != b.request().priority) {
        if (s.request().priority < b.request().priority) continue;
      } else if (t.counter != bt->counter) {
        if (t.counter > bt->counter) continue;
      } else if (t.n_running != bt->n_running) {
        if (t.n_running > bt->n_running) continue;
      } else if (s.arrival > b.arrival) {
        continue;
      }
    }
    best = i;
    bt = &t;
  }
  return best;
}

void FairSharePolicy::Admitted(size_t index) {
  const Sequence& s = *waiting_[index];
  Tenant& t = TenantOf(s);
  ++t.head;
  ++t.n_running;
  // The prompt is charged once, for the tokens it computes; a preempted
  // sequence recomputing is the scheduler's doing, not the tenant's.
  if (!s.admitted_once) t.counter += options_.prompt_token_cost * (s.n_prompt - s.n_cached) / s.request().weight;
  LeaveBacklog(t);
}

void FairSharePolicy::Passed(size_t index) { ++TenantOf(*waiting_[index]).head; }

void FairSharePolicy::OnWaiting(Sequence& s) {
  Tenant& t = tenants_[static_cast<size_t>(SlotOf(s))];
  if (t.n_waiting++ > 0) return;
  // Newly backlogged: no credit for the time it was not.
  double floor = std::numeric_limits<double>::infinity();
  for (const Tenant& o : tenants_) {
    if (&o != &t && o.n_waiting > 0) floor = std::min(floor, o.counter);
  }
  if (floor == std::numeric_limits<double>::infinity() && last_left_ >= 0) {
    floor = tenants_[static_cast<size_t>(last_left_)].counter;
  }
  if (floor != std::numeric_limits<double>::infinity()) t.counter = std::max(t.counter, floor);
}

void FairSharePolicy::OnLeave(const Sequence& s, bool was_waiting) {
  Tenant& t = TenantOf(s);
  if (was_waiting) {
    LeaveBacklog(t);
  } else {
    --t.n_running;
  }
}

void FairSharePolicy::OnSampled(const Sequence& s) {
  TenantOf(s).counter += options_.output_token_cost / s.request().weight;
}

void FairSharePolicy::LeaveBacklog(Tenant& t) {
  if (--t.n_waiting == 0) last_left_ = static_cast<int32_t>(&t - tenants_.data());
}

double FairSharePolicy::counter(const std::string& tenant) const {
  auto it = slots_.find(tenant);
  return it == slots_.end() ? 0 : tenants_[static_cast<size_t>(it->second)].counter;
}

}  // namespace pagoda
