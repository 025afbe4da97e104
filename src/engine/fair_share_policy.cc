#include "engine/fair_share_policy.h"

#include <algorithm>
#include <limits>
#include <ranges>

namespace pagoda {

std::string FairSharePolicy::SlotKey(const std::string& tenant, int32_t priority) {
  return std::to_string(priority) + "/" + tenant;  // the band never holds a '/': unambiguous
}

int32_t FairSharePolicy::SlotOf(Sequence& s) {
  // Looked up again each time the sequence waits: a preempted sequence's
  // tenant may have been forgotten as the sequence left the running set.
  const int32_t priority = s.request().priority;
  std::string key = SlotKey(s.request().tenant, priority);
  auto it = slots_.find(key);
  if (it == slots_.end()) {
    if (options_.forget_idle_tenants && free_.empty() && slots_.size() >= sweep_at_) {
      Sweep();
      sweep_at_ = std::max(options_.first_sweep_at, 2 * slots_.size());
    }
    int32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      tenants_[static_cast<size_t>(slot)] = Tenant();
    } else {
      slot = static_cast<int32_t>(tenants_.size());
      tenants_.emplace_back();
    }
    tenants_[static_cast<size_t>(slot)].key = key;
    tenants_[static_cast<size_t>(slot)].priority = priority;
    it = slots_.emplace(std::move(key), slot).first;
  }
  s.policy_slot = it->second;
  return s.policy_slot;
}

double FairSharePolicy::Floor(int32_t priority, const Tenant* except) const {
  double floor = std::numeric_limits<double>::infinity();
  for (const Tenant& o : tenants_) {  // forgotten slots have nothing waiting
    if (&o != except && o.n_waiting > 0 && o.priority == priority) floor = std::min(floor, o.counter);
  }
  if (floor != std::numeric_limits<double>::infinity()) return floor;
  const auto band = bands_.find(priority);
  if (band == bands_.end()) return floor;
  if (band->second.last_left >= 0) return tenants_[static_cast<size_t>(band->second.last_left)].counter;
  if (band->second.forgotten_floor != -std::numeric_limits<double>::infinity()) return band->second.forgotten_floor;
  return floor;
}

bool FairSharePolicy::MaybeForget(Tenant& t, double floor) {
  if (!options_.forget_idle_tenants || t.n_waiting > 0 || t.n_running > 0) return false;
  if (floor == std::numeric_limits<double>::infinity() || t.counter > floor) return false;
  const auto slot = static_cast<int32_t>(&t - tenants_.data());
  Band& band = bands_[t.priority];
  if (band.last_left == slot) {
    band.forgotten_floor = t.counter;
    band.last_left = -1;
  }
  slots_.erase(t.key);
  t = Tenant();
  free_.push_back(slot);
  return true;
}

void FairSharePolicy::Sweep() {
  // No idle tenant is backlogged, so the idle tenants of a band share one
  // floor, and forgetting them does not move it.
  std::map<int32_t, double> floors;
  for (const auto& [priority, band] : bands_) floors[priority] = Floor(priority, nullptr);
  std::vector<int32_t> idle;
  for (int32_t i : std::views::values(slots_)) {
    const Tenant& t = tenants_[static_cast<size_t>(i)];
    if (t.n_waiting == 0 && t.n_running == 0) idle.push_back(i);
  }
  for (int32_t i : idle) {
    Tenant& t = tenants_[static_cast<size_t>(i)];
    const auto f = floors.find(t.priority);
    if (f != floors.end()) MaybeForget(t, f->second);
  }
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

size_t FairSharePolicy::ShareVictim(std::span<const Sequence* const> waiting,
                                    std::span<const Sequence* const> running, int32_t n_slots) const {
  if (!options_.preempt_for_share || waiting.empty() || running.empty()) return kNone;
  // The head admission takes first (NextCandidate's order).
  const Sequence* w = nullptr;
  for (const Sequence* s : waiting) {
    if (w == nullptr || HeadBefore(*s, *w)) w = s;
  }
  const Tenant& wt = TenantOf(*w);
  int32_t n_tenants = 0;
  for (const Tenant& t : tenants_) n_tenants += t.priority == wt.priority && t.n_running + t.n_waiting > 0;
  const int32_t share = std::max<int32_t>(1, n_slots / std::max<int32_t>(1, n_tenants));
  if (wt.n_running >= share) return kNone;
  size_t v = kNone;
  for (size_t i = 0; i < running.size(); ++i) {
    const Sequence& s = *running[i];
    const Tenant& t = TenantOf(s);
    if (&t == &wt || ClassOf(s) != ClassOf(*w) || t.priority != wt.priority) continue;
    // (A tenant that just joined the backlog was lifted to the flooding
    // one's counter: equal counters, and the one running fewer goes first.)
    if (t.n_running <= share || t.counter < wt.counter) continue;
    if (v != kNone) {
      const Sequence& b = *running[v];
      const Tenant& bt = TenantOf(b);
      if (t.n_running != bt.n_running) {
        if (t.n_running < bt.n_running) continue;
      } else if (t.counter != bt.counter) {
        if (t.counter < bt.counter) continue;
      } else if (s.arrival < b.arrival) {
        continue;
      }
    }
    v = i;
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

bool FairSharePolicy::HeadBefore(const Sequence& s, const Sequence& b) const {
  if (ClassOf(s) != ClassOf(b)) return ClassOf(s) > ClassOf(b);
  if (s.request().priority != b.request().priority) return s.request().priority > b.request().priority;
  const Tenant& t = TenantOf(s);
  const Tenant& bt = TenantOf(b);
  if (t.counter != bt.counter) return t.counter < bt.counter;
  if (t.n_running != bt.n_running) return t.n_running < bt.n_running;
  return s.arrival < b.arrival;
}

size_t FairSharePolicy::NextCandidate() {
  size_t best = kNone;
  for (int32_t ti : active_) {
    const Tenant& t = tenants_[static_cast<size_t>(ti)];
    if (t.head >= t.queue.size()) continue;
    const size_t i = t.queue[t.head];
    if (best == kNone || HeadBefore(*waiting_[i], *waiting_[best])) best = i;
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
  const double floor = Floor(t.priority, &t);
  if (floor != std::numeric_limits<double>::infinity()) t.counter = std::max(t.counter, floor);
}

void FairSharePolicy::OnLeave(const Sequence& s, bool was_waiting) {
  Tenant& t = TenantOf(s);
  if (was_waiting) {
    LeaveBacklog(t);
  } else {
    --t.n_running;
  }
  if (options_.forget_idle_tenants && t.n_waiting == 0 && t.n_running == 0) MaybeForget(t, Floor(t.priority, &t));
}

void FairSharePolicy::OnSampled(const Sequence& s) {
  TenantOf(s).counter += options_.output_token_cost / s.request().weight;
}

void FairSharePolicy::LeaveBacklog(Tenant& t) {
  if (--t.n_waiting == 0) bands_[t.priority].last_left = static_cast<int32_t>(&t - tenants_.data());
}

double FairSharePolicy::counter(const std::string& tenant, int32_t priority) const {
  auto it = slots_.find(SlotKey(tenant, priority));
  return it == slots_.end() ? 0 : tenants_[static_cast<size_t>(it->second)].counter;
}

}  // namespace pagoda
