#include "engine/scheduler.h"

#include <algorithm>

namespace pagoda {
namespace {

int32_t CeilDiv(int32_t a, int32_t b) { return (a + b - 1) / b; }

// Tokens of `s` the next chunk may take within `budget`: a sequence that
// reports its prompt's logprobs takes at most kPromptLogprobRows prompt
// positions a step, so a step's logits stay within (that + the sequences)
// rows of the vocabulary.
int32_t ChunkTokens(const Sequence& s, int32_t budget) {
  int32_t n = std::min(s.n_pending(), budget);
  if (s.reports_prompt() && s.n_computed < s.n_prompt - 1) n = std::min(n, kPromptLogprobRows);
  return n;
}

}  // namespace

bool Scheduler::AdoptsPrefix(const Sequence& s) const {
  return options_.causal && !s.computes_whole_prompt();
}

Scheduler::Scheduler(PagedKvCache& kv, std::unique_ptr<SchedulerPolicy> policy, const SchedulerOptions& options)
    : kv_(kv), policy_(policy ? std::move(policy) : std::make_unique<FcfsPolicy>()), options_(options) {
  PAGODA_CHECK(options_.max_batch_tokens >= 1);
  PAGODA_CHECK(options_.realtime_reserve >= 0 && options_.realtime_reserve < kv_.n_seq_max());
  for (int32_t s = kv_.n_seq_max() - 1; s >= 0; --s) free_slots_.push_back(s);
  const int64_t reserved = int64_t{options_.realtime_reserve} * kv_.pool().n_blocks();
  reserve_blocks_ = static_cast<int32_t>((reserved + kv_.n_seq_max() - 1) / kv_.n_seq_max());
}

void Scheduler::AddWaiting(std::unique_ptr<Sequence> seq) {
  PAGODA_CHECK(seq->slot < 0);
  policy_->OnWaiting(*seq);
  waiting_.push_back(std::move(seq));
}

void Scheduler::AddChunk(StepPlan& plan, Sequence* s, int32_t n, int32_t& budget, int32_t& blocks) const {
  const bool sample = n == s->n_pending();
  // Prompt positions whose logits give the next prompt token's log-probability.
  const int32_t prompt_rows =
      s->reports_prompt() ? std::clamp(s->n_prompt - 1 - s->n_computed, 0, n - (sample ? 1 : 0)) : 0;
  const bool logit_row = sample && s->wants_last_logits();
  int32_t hidden_rows = 0;
  for (int32_t i = 0; i < n; ++i) {
    const int32_t p = s->n_computed + i;
    const bool last = sample && i + 1 == n;
    const bool hidden = s->wants_hidden(p, last);
    hidden_rows += hidden;
    // A decode token is a generated one, however it is scheduled: a preempted
    // sequence recomputes its generated positions through the same weights
    // (--decode-weights) that first computed them.
    plan.batch.Add(s->tokens[p], p, s->slot, i < prompt_rows || (last && logit_row), p >= s->n_prompt, hidden);
  }
  plan.chunks.push_back(ScheduledChunk{s, s->n_computed, n, sample, prompt_rows, logit_row, hidden_rows});
  plan.n_samples += sample;
  plan.n_logit_rows += prompt_rows + (logit_row ? 1 : 0);
  plan.n_hidden_rows += hidden_rows;
  budget -= n;
  blocks += kv_.BlocksToGrow(s->slot, s->n_computed + n);
}

WorkloadClass Scheduler::PendingPromptClass() const {
  WorkloadClass c = WorkloadClass::kBatch;
  for (const auto& s : waiting_) c = std::max(c, ClassOf(*s));
  for (const auto& s : running_) {
    if (s->n_pending() > 1) c = std::max(c, ClassOf(*s));
  }
  return c;
}

bool Scheduler::Schedule(StepPlan& plan, bool allow_admit) {
  plan.Clear();
  int32_t budget = options_.max_batch_tokens;
  int32_t blocks = 0;  // blocks the planned chunks take from the pool
  // Classes below `floor` are paused: a higher class's prompt gets the whole
  // step, so its first token comes about as fast as on an idle server.
  if (allow_admit) PreemptForShare();
  const WorkloadClass floor = PendingPromptClass();
  // Decodes first, so running streams advance every step...
  for (const auto& s : running_) {
    if (budget > 0 && s->n_pending() == 1 && ClassOf(*s) >= floor) AddChunk(plan, s.get(), 1, budget, blocks);
  }
  // ...then prompts already being computed (all of class `floor`), in the
  // policy's order (by admission unless it says otherwise)...
  prefilling_.clear();
  for (const auto& s : running_) {
    if (s->n_pending() > 1 && ClassOf(*s) >= floor) prefilling_.push_back(s.get());
  }
  if (prefilling_.size() > 1) {
    std::stable_sort(prefilling_.begin(), prefilling_.end(),
                     [&](const Sequence* a, const Sequence* b) { return policy_->ComputeBefore(*a, *b); });
  }
  for (Sequence* s : prefilling_) {
    if (budget > 0 && (options_.causal || s->n_pending() <= budget)) {
      AddChunk(plan, s, ChunkTokens(*s, budget), budget, blocks);
    }
  }
  // ...then new sequences.
  if (allow_admit) Admit(plan, budget, blocks, floor);
  return !plan.chunks.empty();
}

void Scheduler::PreemptForShare() {
  // A slot a non-realtime sequence may take is free: admission needs no one's.
  if (waiting_.empty() || running_.empty() ||
      static_cast<int32_t>(free_slots_.size()) > options_.realtime_reserve) {
    return;
  }
  below_.clear();
  for (const auto& s : waiting_) {
    if (!Blocked(*s)) below_.push_back(s.get());
  }
  if (below_.empty()) return;
  std::vector<const Sequence*>& running = share_running_;
  running.clear();
  for (const auto& s : running_) running.push_back(s.get());
  const size_t v = policy_->ShareVictim(below_, running, static_cast<int32_t>(free_slots_.size() + running_.size()));
  if (v == SchedulerPolicy::kNone) return;
  Preempt(running_[v].get());
  ++preemptions_share_;
}

bool Scheduler::Blocked(const Sequence& s) const {
  // Siblings wait for sequence 0 to fill the shared prompt's blocks (and to
  // report its prompt's logprobs, which lead every choice's).
  return s.index > 0 && !s.group->prefix_ready && (kv_.prefix_cache().enabled() || s.request().prompt_logprobs);
}

int32_t Scheduler::AdmissionBlocks(const Sequence& s, int32_t n) {
  lookup_blocks_.clear();
  lookup_hashes_.clear();
  const int32_t bs = kv_.block_size();
  const int32_t max_blocks = (static_cast<int32_t>(s.tokens.size()) - 1) / bs;
  // Lookup takes no reference and counts nothing; AdoptPrefix does both.
  const int32_t hit = !AdoptsPrefix(s) ? 0
                                         : kv_.prefix_cache().Lookup(s.tokens, s.request().cache_salt, max_blocks,
                                                                     &lookup_blocks_, &lookup_hashes_);
  int32_t idle = 0;
  for (kv::BlockId b : lookup_blocks_) idle += kv_.pool().ref_count(b) == 0;
  const int32_t begin = hit * bs;
  const int32_t end = std::min<int32_t>(begin + n, static_cast<int32_t>(s.tokens.size()));
  return idle + CeilDiv(end, bs) - hit;
}

bool Scheduler::Fits(const Sequence& s, int32_t need, int32_t blocks, const StepPlan& plan) const {
  const bool realtime = ClassOf(s) == WorkloadClass::kRealtime;
  if (static_cast<int32_t>(free_slots_.size()) - 1 < (realtime ? 0 : options_.realtime_reserve)) return false;
  // With nothing running it goes ahead anyway: the step's Prepare tells
  // whether the pool can hold it.
  if (running_.empty() && plan.chunks.empty()) return true;
  return kv_.pool().n_available() - blocks - need >= (realtime ? 0 : reserve_blocks_);
}

void Scheduler::CollectBelow(WorkloadClass c) {
  below_.clear();
  below_index_.clear();
  for (size_t i = 0; i < running_.size(); ++i) {
    if (ClassOf(*running_[i]) >= c) continue;
    below_.push_back(running_[i].get());
    below_index_.push_back(i);
  }
}

bool Scheduler::PreemptLowerClasses(const Sequence& s, int32_t budget, int32_t blocks, const StepPlan& plan,
                                    int32_t& need) {
  CollectBelow(ClassOf(s));
  if (below_.empty()) return false;
  // What preempting all of them would free: their slots, and the blocks
  // only they hold. Those `s` would adopt from the prefix cache cost it one
  // each once idle, so they make no room.
  const bool realtime = ClassOf(s) == WorkloadClass::kRealtime;
  const int32_t slots = static_cast<int32_t>(free_slots_.size() + below_.size()) - 1;
  if (slots < (realtime ? 0 : options_.realtime_reserve)) return false;
  if (below_.size() < running_.size() || !plan.chunks.empty()) {
    below_refs_.clear();
    for (const Sequence* v : below_) {
      for (kv::BlockId b : kv_.block_table(v->slot).ids()) ++below_refs_[b];
    }
    int32_t freed = 0;
    for (const auto& [b, n] : below_refs_) freed += n == kv_.pool().ref_count(b);
    for (kv::BlockId b : lookup_blocks_) {
      auto it = below_refs_.find(b);
      freed -= it != below_refs_.end() && it->second == kv_.pool().ref_count(b);
    }
    if (kv_.pool().n_available() + freed - blocks - need < (realtime ? 0 : reserve_blocks_)) return false;
  }
  // The victims are paused this step (their class is below a pending
  // prompt's), so the plan holds none of their tokens.
  while (!Fits(s, need, blocks, plan)) {
    CollectBelow(ClassOf(s));
    PAGODA_CHECK(!below_.empty()) << "class preemption ran out of victims";
    Sequence* victim = running_[below_index_[policy_->PickVictim(below_)]].get();
    Preempt(victim);
    ++preemptions_class_;
    need = AdmissionBlocks(s, budget);
  }
  return true;
}

void Scheduler::Admit(StepPlan& plan, int32_t& budget, int32_t& blocks, WorkloadClass floor) {
  if (waiting_.empty() || budget <= 0) return;
  if (free_slots_.empty()) {
    CollectBelow(floor);
    if (below_.empty()) return;
  }
  std::stable_sort(waiting_.begin(), waiting_.end(),
                   [&](const auto& a, const auto& b) { return policy_->AdmitBefore(*a, *b); });
  round_.clear();
  for (const auto& s : waiting_) round_.push_back(s.get());
  policy_->BeginAdmission(round_);
  bool admitted = false;
  while (budget > 0) {
    const size_t i = policy_->NextCandidate();
    if (i == SchedulerPolicy::kNone) break;
    Sequence& s = *round_[i];
    // The policy ranks classes first: from here on every candidate is of a
    // lower class than a pending prompt, and paused.
    if (ClassOf(s) < floor) break;
    if (Blocked(s)) {
      policy_->Passed(i);
      continue;
    }
    // Its prefix is being read from an offload tier: later ones go ahead.
    if (AdoptsPrefix(s) &&
        kv_.PrefetchPrefix(PrefetchKey(s), s.tokens, s.request().cache_salt) ==
            PagedKvCache::PrefetchState::kPending) {
      policy_->Passed(i);
      continue;
    }
    // An encoder's sequence is computed in one step: it waits for a step with room.
    if (!options_.causal && s.n_pending() > budget) break;
    int32_t need = AdmissionBlocks(s, budget);
    // Head of line: a sequence that does not fit waits, and so do later
    // ones (no starvation of long prompts), unless lower classes can make room.
    if (!Fits(s, need, blocks, plan) && !PreemptLowerClasses(s, budget, blocks, plan, need)) break;
    s.slot = free_slots_.back();
    free_slots_.pop_back();
    if (before_commit_) before_commit_(s);  // adoption may register blocks restored from an offload tier
    const int32_t adopted =
        !AdoptsPrefix(s) ? 0
                         : kv_.AdoptPrefix(s.slot, s.tokens, s.request().cache_salt, blocks + reserve_blocks_,
                                             PrefetchKey(s));
    s.n_computed = adopted;
    if (!s.admitted_once) s.n_cached = std::min(adopted, s.n_prompt);
    policy_->Admitted(i);
    running_.push_back(std::move(waiting_[i]));  // leaves a null behind, erased below
    admitted = true;
    Sequence* r = running_.back().get();
    AddChunk(plan, r, ChunkTokens(*r, budget), budget, blocks);
  }
  if (admitted) std::erase(waiting_, nullptr);
}

void Scheduler::Commit(const StepPlan& plan) {
  for (const ScheduledChunk& c : plan.chunks) {
    Sequence& s = *c.seq;
    s.n_computed += c.n;
    const int32_t shareable = options_.decode_weights ? std::min(s.n_computed, s.n_prompt) : s.n_computed;
    if (before_commit_) before_commit_(s);
    if (options_.causal) kv_.CommitBlocks(s.slot, std::span<const int32_t>(s.tokens.data(), static_cast<size_t>(shareable)),
                     s.request().cache_salt);
    if (s.index == 0 && s.request().kv_export) {
      // The prompt's blocks leave as they are finished (P/D transfer).
      s.n_exported = kv_.ExportBlocks(s.slot, s.n_exported,
                                      std::span<const int32_t>(s.tokens.data(), static_cast<size_t>(s.n_prompt)),
                                      s.request().cache_salt, *s.request().kv_export);
    }
    if (s.index == 0 && s.n_computed >= s.n_prompt) s.group->prefix_ready = true;
    if (c.sample) policy_->OnSampled(s);
  }
}

Sequence* Scheduler::PickVictim() const {
  if (running_.empty()) return nullptr;
  std::vector<const Sequence*> r;
  r.reserve(running_.size());
  for (const auto& s : running_) r.push_back(s.get());
  return running_[policy_->PickVictim(r)].get();
}

void Scheduler::ReleaseSlot(Sequence& s) {
  if (s.slot < 0) return;
  kv_.RemoveSequence(s.slot);
  free_slots_.push_back(s.slot);
  s.slot = -1;
  s.n_computed = 0;
}

void Scheduler::Preempt(Sequence* seq) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == seq; });
  PAGODA_CHECK(it != running_.end()) << "preempting a sequence that is not running";
  ReleaseSlot(*seq);
  policy_->OnLeave(*seq, false);
  policy_->OnWaiting(*seq);
  waiting_.push_back(std::move(*it));
  running_.erase(it);
}

std::unique_ptr<Sequence> Scheduler::Remove(Sequence* seq) {
  for (auto* list : {&running_, &waiting_}) {
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& p) { return p.get() == seq; });
    if (it == list->end()) continue;
    std::unique_ptr<Sequence> s = std::move(*it);
    list->erase(it);
    if (list == &waiting_) kv_.CancelPrefetch(PrefetchKey(*s));
    policy_->OnLeave(*s, list == &waiting_);
    ReleaseSlot(*s);
    if (s->index == 0) s->group->prefix_ready = true;
    return s;
  }
  PAGODA_CHECK(false) << "removing an unknown sequence";
  return nullptr;
}

}  // namespace pagoda
