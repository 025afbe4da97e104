// Engine: the batching inference loop. It owns the paged KV cache, the
// scheduler and one engine thread that runs the model; other threads
// (HTTP handlers) hand it requests through Submit and read each request's
// events from its RequestChannel.
//
// Threading: Submit, stats and Stop may be called from any thread. Every
// other piece of state (scheduler, KV cache, samplers, the model) belongs to
// the engine thread. Without Start, a test or a single-threaded program
// drives the loop itself with Step().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/status.h"
#include "engine/engine_request.h"
#include "engine/engine_stats.h"
#include "engine/fair_share_policy.h"
#include "engine/kv_event_collector.h"
#include "engine/request_channel.h"
#include "engine/scheduler.h"
#include "kvevents/kv_event.h"
#include "model/model.h"
#include "model/paged_kv_cache.h"
#include "sampling/grammar/token_bitmask.h"

namespace pagoda {

namespace grammar {
class TokenVocabIndex;
}

// The admission policy Engine::Create builds when given none
// (docs/SCHEDULING.md).
enum class SchedulingMode : uint8_t {
  kFcfs,  // by arrival
  kFair,  // strict priority bands, VTC fair share between tenants within each
};
const char* SchedulingModeName(SchedulingMode m);

struct EngineOptions {
  int32_t n_ctx = 2048;            // positions one sequence may reach
  int32_t max_running = 16;        // sequences in the KV cache at once
  int32_t max_waiting = 256;       // queued sequences before Submit answers ResourceExhausted
  int32_t max_batch_tokens = 512;  // token budget of one step (chunked prefill)
  int32_t max_n = 16;              // largest EngineRequest::n accepted
  SchedulingMode scheduling = SchedulingMode::kFcfs;
  FairShareOptions fair_share;     // with kFair
  // Sequence slots (--realtime-reserve), and that share of the KV pool's
  // blocks (rounded up), kept free for realtime-class requests: a batch or
  // interactive sequence is admitted only if as many stay free after it.
  // In [0, max_running).
  int32_t realtime_reserve = 0;
  // KV pool budget; 0: enough for max_running sequences of n_ctx positions.
  int64_t kv_memory_bytes = 0;
  int32_t block_size = 16;
  KvType kv_type = KvType::kF16;
  bool prefix_caching = true;
  // Disk offload tier of the prefix cache (--kv-offload disk=SIZE,
  // --kv-offload-dir DIR; docs/KV_OFFLOAD.md): empty dir = none.
  // model_fingerprint (model/model_fingerprint.h, with the decode weights
  // folded in) keeps blocks of another model out of it.
  std::string kv_offload_dir;
  int64_t kv_offload_disk_bytes = 0;
  std::string kv_offload_redis_url;  // the shared tier (docs/KV_OFFLOAD.md); empty: none
  // Host-memory tier (--kv-offload memory=SIZE), searched before the others;
  // a decode replica's KV transfers land in it. 0: none.
  int64_t kv_offload_memory_bytes = 0;
  uint64_t model_fingerprint = 0;
  // KV page integrity check before every step (--kv-integrity): a sequence
  // whose pages changed under it ends with kv::IntegrityError.
  kv::IntegrityMode kv_integrity = kv::IntegrityMode::kCheck;
  // Tests only (`pagoda serve --testing-kv-fault`, refused without
  // PAGODA_TESTING=1): plants this fault once, in the first decoding sequence
  // with 2 generated tokens (kSwap: and a second one).
  std::optional<KvFault> testing_kv_fault;
  // Which ids end generation (the tokenizer's IsEog); may be empty.
  std::function<bool(TokenId)> is_eog;
  // The tokenizer's vocabulary for grammar constraints, built once with
  // grammar::TokenVocabIndex::Build(tokenizer); requests with a constraint
  // are rejected without it.
  std::shared_ptr<const grammar::TokenVocabIndex> grammar_vocab;
  // KV events (docs/KV_EVENTS.md): called on the engine thread after each
  // step that changed the prefix cache, with that step's stored / removed
  // blocks as one batch, and once before the first step with
  // [AllBlocksCleared] (the cache starts empty). Must not block
  // (kvevents::Publisher::Publish queues). Needs prefix_caching.
  std::function<void(kvevents::EventBatch&&)> kv_event_sink;
};

class Engine {
 public:
  // `model` must outlive the engine. policy: nullptr for the one
  // options.scheduling names.
  static Result<std::unique_ptr<Engine>> Create(Model& model, const EngineOptions& options,
                                                std::unique_ptr<SchedulerPolicy> policy = nullptr);
  ~Engine();  // Stop() with no drain time
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Any thread. Validates and queues a request. Errors: InvalidArgument (bad
  // prompt, prompt too long for the context, bad sampling parameters),
  // ResourceExhausted (the waiting queue is full: answer 429),
  // FailedPrecondition (the engine is stopping: answer 503).
  Result<RequestHandle> Submit(EngineRequest request);
  // Any thread: the counters as of the last step.
  EngineStats stats() const;

  // Starts the engine thread.
  void Start();
  // Any thread but the engine's. Stops admitting new requests, lets queued
  // and running ones finish for up to drain_timeout, then ends the rest with
  // an error (FailedPrecondition) and joins the engine thread.
  void Stop(std::chrono::milliseconds drain_timeout = std::chrono::milliseconds(0));

  // Without Start only: runs one step (cancellations and deadlines, then one
  // forward pass); false when there was nothing to run.
  bool Step();

  // Any thread, while the engine lives: the KV memory tier (null when
  // none; thread-safe itself) and the layout of the engine's KV blocks.
  kv::MemoryTier* kv_memory_tier() const { return kv_->memory_tier(); }
  const kv::BlockLayout& kv_block_layout() const { return kv_->block_layout(); }

  // Engine thread (or a test driving Step) only.
  const PagedKvCache& kv_cache() const { return *kv_; }
  const Scheduler& scheduler() const { return scheduler_; }
  const EngineOptions& options() const { return options_; }
  // Tests only, without Start: plants a KV fault (model/paged_kv_cache.h) in
  // the running sequence `index` of request `request_id` (kSwap: swapped
  // with sequence 0 of `other_request_id`). NotFound when not running.
  Status InjectKvFaultForTesting(KvFault kind, const std::string& request_id, int32_t index = 0,
                                 const std::string& other_request_id = "");

 private:
  Engine(Model& model, const EngineOptions& options, std::unique_ptr<PagedKvCache> kv,
         std::unique_ptr<SchedulerPolicy> policy);
  Status Validate(const EngineRequest& r) const;
  Status ValidateConstraint(const EngineRequest& r) const;  // engine_grammar.cc
  void Loop();
  bool StepOnce();
  // Ends every queued and running sequence with an error (the engine stopped).
  void FailRemaining();
  void TakeInbox();
  void ReapCancelledAndExpired(EngineClock::time_point now);
  // Runs one forward pass, preempting on a full KV cache; false when idle.
  bool RunBatch();
  // The batched page-integrity check of plan_ (engine_integrity.cc): stops
  // every scheduled sequence that fails it; true if any did (plan again).
  bool StopCorruptSequences();
  void MaybePlantTestingFault();
  void NoteAdmitted(Sequence& s);
  Status ValidatePrefill(const EngineRequest& r) const;
  // EngineRequest::prefill (engine_prefill.cc): adds the hidden rows of the
  // chunk starting at `begin` to the sequence's pooled state...
  void Pool(Sequence& s, int32_t begin, std::span<const float> rows);
  // ...and, once its prompt is computed, sends the embedding or score
  // (`logits`: the last position's row, when wanted) and finishes it.
  void FinishPrefill(Sequence& s, const float* logits);
  // Candidates of a ranked request leave together, best first: true when
  // `ev` was held for that (all are pushed once the last finishes).
  bool HoldRanked(Sequence& s, EngineEvent& ev);
  void SampleAndEmit(Sequence& s, const float* logits);
  // EngineRequest::prompt_logprobs: the event of prompt token `position`
  // from the logits of the position before it (once per position).
  void EmitPromptLogprob(Sequence& s, int32_t position, const float* logits);
  // Grammar constraint steps of SampleAndEmit (engine_grammar.cc). Returns the
  // mask to sample under (nullptr: unconstrained), or an error when no token
  // may follow.
  Result<const grammar::TokenBitmask*> GrammarMask(Sequence& s);
  // After sampling `id`: advances the grammar (or watches for delay_until);
  // true when the grammar is complete and nothing may follow.
  bool GrammarAccept(Sequence& s, TokenId id);
  // Sends the sequence's final event and removes it.
  void Finish(Sequence* s, EngineEvent event);
  void FinishWithError(Sequence* s, FinishReason reason, Status error);
  void Publish();
  // Hands the step's KV events, if any, to options_.kv_event_sink.
  void FlushKvEvents();

  Model& model_;
  const EngineOptions options_;
  std::unique_ptr<PagedKvCache> kv_;
  Scheduler scheduler_;
  StepPlan plan_;
  std::vector<float> logits_;  // [max_running, n_vocab]
  std::vector<float> work_;    // [n_vocab]
  std::vector<float> hidden_;  // [step's hidden rows, n_embd] (pooling)
  grammar::TokenBitmask grammar_mask_;  // SampleAndEmit scratch
  EngineStats stats_;          // engine thread's copy
  std::vector<int32_t> integrity_seqs_;  // StopCorruptSequences scratch
  std::vector<kv::IntegrityFailure> integrity_failures_;
  bool testing_fault_planted_ = false;
  std::unique_ptr<KvEventCollector> kv_events_;  // null without options_.kv_event_sink

  // Shared with Submit / Stop / stats.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Sequence>> inbox_;
  int64_t n_waiting_ = 0;  // inbox + scheduler's waiting, as of the last hand-over
  uint64_t next_arrival_ = 0;
  bool accepting_ = true;
  bool stopping_ = false;
  EngineClock::time_point drain_deadline_;
  int64_t rejected_ = 0;
  EngineStats published_;
  std::thread thread_;
  std::atomic<bool> started_{false};
  // A real-time request arrived since the last hand-over (set under mu_ by
  // Submit, cleared by TakeInbox); interrupts a step of only lower-class work.
  std::atomic<bool> realtime_arrived_{false};
};

}  // namespace pagoda
