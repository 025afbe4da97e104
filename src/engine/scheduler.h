// Scheduler: builds each engine step (continuous batching with chunked
// prefill). Every step is one Batch under a token budget: first the next
// token of every decoding sequence, then chunks of partially computed
// prompts (SchedulerPolicy::ComputeBefore, else admission order), then newly
// admitted sequences in policy order, which first adopt
// their prompt's cached prefix blocks. A long prompt is spread over several
// steps, so it never stalls the running streams.
// When the model's Prepare reports the KV cache full, the engine asks for a
// victim and preempts it by recompute: its blocks are released and it waits
// again with its generated tokens appended to its prompt (cached prefix
// blocks make the resume cheap).
// Workload classes (EngineRequest::workload_class): lower classes run only
// in the capacity higher ones leave. While a sequence of some class has
// prompt work pending (waiting, or admitted with more than one token to
// compute), every sequence of a lower class is paused for the step (no
// tokens; it keeps its KV). A waiting sequence that finds no slot or too
// few blocks preempts running sequences of lower classes, if that makes
// room. realtime_reserve keeps slots and blocks free for the realtime class.
// With every slot taken, the policy may name a running sequence to preempt
// so that a waiting tenant under its fair share starts (ShareVictim).
// Owns the waiting and running sequences. Engine thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/scheduler_policy.h"
#include "engine/sequence.h"
#include "model/batch.h"
#include "model/paged_kv_cache.h"

namespace pagoda {

// Prompt positions whose logprobs one sequence reports per step
// (EngineRequest::prompt_logprobs): bounds the logits a step produces.
inline constexpr int32_t kPromptLogprobRows = 64;

struct SchedulerOptions {
  int32_t max_batch_tokens = 512;  // token budget of one step
  // The model has decode-weight copies (--decode-weights): generated
  // positions' K/V come from other weights than a prompt's, so blocks holding
  // generated tokens are not offered to the prefix cache (a later prompt made
  // of the same tokens must compute them as prompt tokens).
  bool decode_weights = false;
  // Sequence slots, and the same share of the KV pool's blocks (rounded up),
  // that admitting a batch or interactive sequence must leave free: only
  // realtime sequences may use them. In [0, the KV cache's n_seq_max).
  int32_t realtime_reserve = 0;
  // false for encoders (Model::causal): a sequence is computed whole in one
  // step, adopts no cached prefix and offers no blocks to the prefix cache.
  bool causal = true;
};

// Tokens [begin, begin + n) of seq->tokens go into the step; `sample`: the
// chunk ends at the last token, whose logits are sampled (a prefill-only
// sequence finishes instead; its logits row exists when logit_row).
struct ScheduledChunk {
  Sequence* seq = nullptr;
  int32_t begin = 0;
  int32_t n = 0;
  bool sample = false;
  // Rows of logits before the sampled one: prompt positions begin ..
  // begin + n_prompt_rows - 1, whose next prompt token's log-probability is
  // reported (Sequence::reports_prompt).
  int32_t n_prompt_rows = 0;
  bool logit_row = false;     // a row of logits after the prompt rows
  int32_t n_hidden_rows = 0;  // hidden-state rows (pooling), in position order
};

struct StepPlan {
  std::vector<ScheduledChunk> chunks;
  Batch batch;
  int32_t n_samples = 0;  // chunks with sample
  // Logits rows, in chunk order: each chunk's prompt rows, then its sample row.
  int32_t n_logit_rows = 0;
  int32_t n_hidden_rows = 0;  // in chunk order
  void Clear() {
    chunks.clear();
    batch.Clear();
    n_samples = 0;
    n_logit_rows = 0;
    n_hidden_rows = 0;
  }
};

class Scheduler {
 public:
  Scheduler(PagedKvCache& kv, std::unique_ptr<SchedulerPolicy> policy, const SchedulerOptions& options);

  void AddWaiting(std::unique_ptr<Sequence> seq);
  // Fills `plan` with the next step; false when there is nothing to run.
  // allow_admit = false keeps waiting sequences out (a retry after a preemption).
  bool Schedule(StepPlan& plan, bool allow_admit = true);
  // After a successful forward of `plan`: advances the sequences and
  // registers their newly filled blocks in the prefix cache (before_commit,
  // when set, is called with each sequence just before its blocks are, and
  // before an admitted sequence adopts its prefix: blocks restored from an
  // offload tier are registered then).
  void Commit(const StepPlan& plan);
  void SetBeforeCommit(std::function<void(const Sequence&)> f) { before_commit_ = std::move(f); }
  SchedulerPolicy& policy() { return *policy_; }
  const SchedulerPolicy& policy() const { return *policy_; }
  // The running sequence the policy gives up first; nullptr when none runs.
  Sequence* PickVictim() const;
  // Releases a running sequence's blocks and slot and puts it back among the waiting.
  void Preempt(Sequence* seq);
  // Sequences Schedule preempted to make room for a higher workload class.
  int64_t preemptions_class() const { return preemptions_class_; }
  // Sequences Schedule preempted for a tenant under its fair share of the
  // slots (SchedulerPolicy::ShareVictim).
  int64_t preemptions_share() const { return preemptions_share_; }
  // Blocks admission of a non-realtime sequence leaves available (SchedulerOptions::realtime_reserve).
  int32_t realtime_reserve_blocks() const { return reserve_blocks_; }
  // Removes a sequence (running or waiting) and releases its blocks and
  // slot; returns it so the caller can report it.
  std::unique_ptr<Sequence> Remove(Sequence* seq);

  const std::vector<std::unique_ptr<Sequence>>& running() const { return running_; }
  const std::vector<std::unique_ptr<Sequence>>& waiting() const { return waiting_; }
  bool idle() const { return running_.empty() && waiting_.empty(); }

 private:
  // Names a waiting sequence to the KV tier loader (unique while it lives).
  static uint64_t PrefetchKey(const Sequence& s) { return reinterpret_cast<uintptr_t>(&s); }
  void AddChunk(StepPlan& plan, Sequence* s, int32_t n, int32_t& budget, int32_t& blocks) const;
  // The highest class with prompt work pending (waiting, or running with
  // more than one token to compute); lower classes are paused. kBatch when none.
  WorkloadClass PendingPromptClass() const;
  void Admit(StepPlan& plan, int32_t& budget, int32_t& blocks, WorkloadClass floor);
  // Blocks a new sequence's first chunk of n tokens may take from the pool,
  // counting cached blocks it would adopt that nobody holds now.
  int32_t AdmissionBlocks(const Sequence& s, int32_t n);
  // Whether `s`, whose first chunk needs `need` blocks, may start now: a
  // free slot and the blocks, leaving the realtime reserve unless it is realtime.
  bool Fits(const Sequence& s, int32_t need, int32_t blocks, const StepPlan& plan) const;
  // Preempts running sequences of classes below `s`'s (the policy's victims
  // first) until `s` fits, updating `need`; preempts no one and returns false
  // when even all of them would not make room. Needs lookup_blocks_ from
  // AdmissionBlocks(s, budget).
  bool PreemptLowerClasses(const Sequence& s, int32_t budget, int32_t blocks, const StepPlan& plan, int32_t& need);
  // Running sequences of classes below `c`, as PickVictim candidates (and their indices into running_).
  void CollectBelow(WorkloadClass c);
  // While no slot is free for a waiting sequence, preempts the running
  // sequence the policy names for fair share (one per step at most).
  void PreemptForShare();
  bool Blocked(const Sequence& s) const;
  // Whether `s` may start from its prompt's cached prefix blocks.
  bool AdoptsPrefix(const Sequence& s) const;
  void ReleaseSlot(Sequence& s);

  PagedKvCache& kv_;
  std::unique_ptr<SchedulerPolicy> policy_;
  SchedulerOptions options_;
  std::vector<std::unique_ptr<Sequence>> running_;
  std::vector<std::unique_ptr<Sequence>> waiting_;
  std::vector<int32_t> free_slots_;  // KV sequence ids, a stack
  std::function<void(const Sequence&)> before_commit_;
  int32_t reserve_blocks_ = 0;
  int64_t preemptions_class_ = 0;
  int64_t preemptions_share_ = 0;
  // Scratch.
  std::vector<kv::BlockId> lookup_blocks_;
  std::vector<kv::BlockHash> lookup_hashes_;
  std::vector<Sequence*> round_;  // the waiting list during Admit (policy's view)
  std::vector<Sequence*> prefilling_;  // Schedule scratch
  std::vector<const Sequence*> below_;  // CollectBelow
  std::vector<size_t> below_index_;
  std::vector<const Sequence*> share_running_;  // PreemptForShare
  std::unordered_map<kv::BlockId, int32_t> below_refs_;  // PreemptLowerClasses scratch
};

}  // namespace pagoda
