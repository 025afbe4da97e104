#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <string>
#include <thread>

#include "base/log.h"
#include "sampling/logprobs.h"

namespace pagoda {
namespace {

// The tiers' own (thread-safe) counters; restored tokens are the engine
// thread's and are copied only when `restored` (by Publish).
void CopyTierStats(const PagedKvCache& kv, bool restored, EngineStats& s) {
  const std::vector<kv::KvTier*>& tiers = kv.tiers();
  s.kv_offload_tiers.resize(tiers.size());
  for (size_t i = 0; i < tiers.size(); ++i) {
    const kv::KvTierStats d = tiers[i]->stats();
    EngineStats::OffloadTier& t = s.kv_offload_tiers[i];
    t.name = std::string(tiers[i]->name());
    t.blocks = d.blocks;
    t.bytes = d.bytes;
    t.queued = d.queued;
    t.writes = d.writes;
    t.write_bytes = d.write_bytes;
    t.dropped = d.dropped;
    t.read_bytes = d.read_bytes;
    t.read_seconds = d.read_seconds;
    t.corrupt = d.corrupt;
    if (restored) t.restored_tokens = kv.offload_stats().tier_restored_tokens[i];
  }
}

constexpr int32_t kMaxTopLogprobs = 20;

double Seconds(EngineClock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

const char* SchedulingModeName(SchedulingMode m) { return m == SchedulingMode::kFair ? "fair" : "fcfs"; }

Result<std::unique_ptr<Engine>> Engine::Create(Model& model, const EngineOptions& options,
                                               std::unique_ptr<SchedulerPolicy> policy) {
  if (options.n_ctx < 2 || options.max_running < 1 || options.max_waiting < 1 ||
      options.max_batch_tokens < 1 || options.max_n < 1 || options.block_size < 1) {
    return InvalidArgument("engine options: n_ctx >= 2, and max_running, max_waiting, max_batch_tokens, "
                           "max_n, block_size >= 1 are required");
  }
  if (!(options.fair_share.prompt_token_cost >= 0) || !(options.fair_share.output_token_cost >= 0) ||
      !std::isfinite(options.fair_share.prompt_token_cost) || !std::isfinite(options.fair_share.output_token_cost)) {
    return InvalidArgument("engine options: fair-share token costs must be finite and non-negative");
  }
  if (options.realtime_reserve < 0 || options.realtime_reserve >= options.max_running) {
    return InvalidArgument("engine options: realtime_reserve must be in [0, max_running), got " +
                           std::to_string(options.realtime_reserve) + " with max_running " +
                           std::to_string(options.max_running));
  }
  if (options.kv_event_sink && !options.prefix_caching) {
    return InvalidArgument("KV events report the prefix cache, which is disabled");
  }
  PagedKvCacheOptions ko;
  ko.n_seq_max = options.max_running;
  ko.n_ctx = options.n_ctx;
  ko.block_size = options.block_size;
  ko.type = options.kv_type;
  ko.prefix_caching = options.prefix_caching;
  ko.integrity = options.kv_integrity;
  ko.memory_bytes = options.kv_memory_bytes;
  ko.offload_dir = options.kv_offload_dir;
  ko.offload_disk_bytes = options.kv_offload_disk_bytes;
  ko.offload_redis_url = options.kv_offload_redis_url;
  ko.offload_memory_bytes = options.kv_offload_memory_bytes;
  ko.model_fingerprint = options.model_fingerprint;
  if (ko.memory_bytes == 0) {
    const int64_t blocks_per_seq = (options.n_ctx + options.block_size - 1) / options.block_size;
    ko.memory_bytes = PagedKvCache::BlockBytes(model.kv_cache_spec(), options.kv_type, options.block_size) *
                      blocks_per_seq * options.max_running;
  }
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<PagedKvCache> kv, PagedKvCache::Create(model.kv_cache_spec(), ko));
  if (!policy) {
    if (options.scheduling == SchedulingMode::kFair) {
      policy = std::make_unique<FairSharePolicy>(options.fair_share);
    } else {
      policy = std::make_unique<FcfsPolicy>();
    }
  }
  return std::unique_ptr<Engine>(new Engine(model, options, std::move(kv), std::move(policy)));
}

Engine::Engine(Model& model, const EngineOptions& options, std::unique_ptr<PagedKvCache> kv,
               std::unique_ptr<SchedulerPolicy> policy)
    : model_(model),
      options_(options),
      kv_(std::move(kv)),
      scheduler_(*kv_, std::move(policy),
                 SchedulerOptions{options.max_batch_tokens, model.decode_weights_info().type.has_value(),
                                  options.realtime_reserve, model.causal()}) {
  logits_.resize(static_cast<size_t>(options_.max_running) * static_cast<size_t>(model_.n_vocab()));
  work_.resize(static_cast<size_t>(model_.n_vocab()));
  // Known before the first step: /metrics reports it from the start.
  stats_.kv_capacity_tokens = static_cast<int64_t>(kv_->pool().n_blocks()) * kv_->block_size();
  published_.kv_capacity_tokens = stats_.kv_capacity_tokens;
  // With a disk tier, what its startup scan found shows before the first step.
  if (!kv_->tiers().empty()) Publish();
  if (options_.kv_event_sink) {
    kv_events_ = std::make_unique<KvEventCollector>(options_.block_size);
    kv_events_->AddCleared();  // a (re)started replica's cache is empty
    kv_->prefix_cache().SetEventSink([c = kv_events_.get()](const kv::PrefixCacheEvent& e) { c->Add(e); });
    // Blocks are stored only while a sequence commits: the collector learns
    // their salt just before (its digest goes out in extra_keys).
    scheduler_.SetBeforeCommit([c = kv_events_.get()](const Sequence& s) { c->SetSalt(s.request().cache_salt); });
    kv_->SetTierEventSink([c = kv_events_.get()](const kv::TierEvent& e) { c->Add(e); });
    // What a restarted replica's disk tier still holds, right after the
    // AllBlocksCleared, so a router credits it as DISK.
    if (const int64_t n = kv_->AnnounceOpenedBlocks(); n > 0) {
      PAGODA_LOG(Info) << "KV events: announcing " << n << " offloaded blocks found at start";
    }
  }
}

Engine::~Engine() { Stop(); }

Status Engine::Validate(const EngineRequest& r) const {
  const int64_t n_vocab = model_.n_vocab();
  // Candidates sharing a prefix (PrefillTask::suffixes) may share none.
  const bool candidates = r.prefill && !r.prefill->suffixes.empty();
  if (r.prompt.empty() && !candidates) return InvalidArgument("the prompt is empty (no tokens)");
  if (r.kv_export && !options_.prefix_caching) {
    return InvalidArgument("exporting a prompt's KV blocks needs prefix caching");
  }
  if (static_cast<int64_t>(r.prompt.size()) >= options_.n_ctx) {
    return InvalidArgument("the prompt has " + std::to_string(r.prompt.size()) +
                           " tokens, which does not leave room in a context of " + std::to_string(options_.n_ctx));
  }
  for (TokenId t : r.prompt) {
    if (t < 0 || t >= n_vocab) return InvalidArgument("prompt token id " + std::to_string(t) + " is outside the vocabulary");
  }
  for (TokenId t : r.stop_tokens) {
    if (t < 0 || t >= n_vocab) return InvalidArgument("stop token id " + std::to_string(t) + " is outside the vocabulary");
  }
  if (r.prefill) {
    PAGODA_RETURN_IF_ERROR(ValidatePrefill(r));
  } else {
    if (r.max_tokens < 0) return InvalidArgument("max_tokens must not be negative");
    if (!model_.generates()) return InvalidArgument("the model does not generate text (an embedding model)");
    if (r.n < 1 || r.n > options_.max_n) {
      return InvalidArgument("n must be in [1, " + std::to_string(options_.max_n) + "], got " + std::to_string(r.n));
    }
  }
  if (r.n > options_.max_waiting) return InvalidArgument("n exceeds the engine's waiting queue");
  if (!std::isfinite(r.weight) || r.weight <= 0) return InvalidArgument("the scheduling weight must be finite and positive");
  if (r.top_logprobs < 0 || r.top_logprobs > kMaxTopLogprobs) {
    return InvalidArgument("top_logprobs must be in [0, " + std::to_string(kMaxTopLogprobs) + "]");
  }
  PAGODA_RETURN_IF_ERROR(ValidateConstraint(r));
  return r.sampling.ValidateForVocab(static_cast<int32_t>(n_vocab));
}

Status Engine::ValidatePrefill(const EngineRequest& r) const {
  const PrefillTask& t = *r.prefill;
  const int64_t n_seqs = t.suffixes.empty() ? 1 : static_cast<int64_t>(t.suffixes.size());
  if (r.n != n_seqs) return InvalidArgument("a prefill request's n must equal its number of candidates");
  if (r.prompt_logprobs || r.constraint || r.kv_export) {
    return InvalidArgument("prompt logprobs, grammars and KV export do not apply to embeddings or scores");
  }
  if (t.top_n < 0) return InvalidArgument("top_n must not be negative");
  int64_t longest = static_cast<int64_t>(r.prompt.size());
  for (const auto& suffix : t.suffixes) {
    if (r.prompt.empty() && suffix.empty()) return InvalidArgument("a candidate has no tokens");
    longest = std::max(longest, static_cast<int64_t>(r.prompt.size() + suffix.size()));
    for (TokenId id : suffix) {
      if (id < 0 || id >= model_.n_vocab()) return InvalidArgument("candidate token id " + std::to_string(id) + " is outside the vocabulary");
    }
  }
  if (longest >= options_.n_ctx) {
    return InvalidArgument("an input has " + std::to_string(longest) + " tokens, more than the context of " +
                           std::to_string(options_.n_ctx) + " allows");
  }
  if (!model_.causal() && longest > options_.max_batch_tokens) {
    return InvalidArgument("an input has " + std::to_string(longest) + " tokens; an encoder computes each input in "
                           "one step of at most " + std::to_string(options_.max_batch_tokens) + " tokens");
  }
  if (t.kind == PrefillTask::Kind::kScore) {
    const bool yes_no = t.score_yes >= 0 || t.score_no >= 0;
    if (yes_no) {
      if (!model_.generates()) return InvalidArgument("yes/no scoring needs a model with an LM head");
      if (t.score_yes < 0 || t.score_no < 0 || t.score_yes >= model_.n_vocab() || t.score_no >= model_.n_vocab()) {
        return InvalidArgument("yes/no score token ids must both be in the vocabulary");
      }
    } else if (model_.n_classifier_outputs() < 1) {
      return InvalidArgument("the model has no classifier head to score with");
    }
  } else if (t.dimensions < 0 || t.dimensions > model_.config().n_embd) {
    return InvalidArgument("dimensions must be in [1, " + std::to_string(model_.config().n_embd) + "]");
  }
  if (t.pooling != PoolingType::kMean && t.pooling != PoolingType::kCls && t.pooling != PoolingType::kLast &&
      t.pooling != PoolingType::kRank) {
    return InvalidArgument(std::string("pooling '") + PoolingTypeName(t.pooling) + "' does not give one vector");
  }
  return Status::Ok();
}

Result<RequestHandle> Engine::Submit(EngineRequest request) {
  PAGODA_RETURN_IF_ERROR(Validate(request));
  const int32_t n_vocab = static_cast<int32_t>(model_.n_vocab());
  auto group = std::make_shared<RequestGroup>();
  group->channel = std::make_shared<RequestChannel>(request.id, request.n);
  group->arrival = EngineClock::now();
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int32_t i = 0; i < request.n; ++i) {
    SamplingParams sp = request.sampling;
    sp.seed += static_cast<uint64_t>(i);  // sequence 0 samples exactly as Generator does
    PAGODA_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(sp, n_vocab));
    auto s = std::make_unique<Sequence>();
    s->index = i;
    s->tokens = request.prompt;
    if (request.prefill && !request.prefill->suffixes.empty()) {
      const auto& suffix = request.prefill->suffixes[static_cast<size_t>(i)];
      s->tokens.insert(s->tokens.end(), suffix.begin(), suffix.end());
    } else if (!request.prefill) {
      s->tokens.reserve(request.prompt.size() + static_cast<size_t>(request.max_tokens));
    }
    s->n_prompt = static_cast<int32_t>(s->tokens.size());
    s->sampler.emplace(std::move(sampler));
    if (request.constraint) {
      s->grammar.emplace(request.constraint->grammar, options_.grammar_vocab);
      s->grammar_active = request.constraint->delay_until.empty();
    }
    seqs.push_back(std::move(s));
  }
  group->request = std::move(request);
  {
    std::lock_guard lock(mu_);
    if (!accepting_) return FailedPrecondition("the engine is shutting down");
    if (n_waiting_ + static_cast<int64_t>(seqs.size()) > options_.max_waiting) {
      ++rejected_;
      return ResourceExhausted("the waiting queue is full (" + std::to_string(options_.max_waiting) + " sequences)");
    }
    for (auto& s : seqs) {
      s->group = group;
      s->arrival = next_arrival_++;
      inbox_.push_back(std::move(s));
    }
    n_waiting_ += static_cast<int64_t>(seqs.size());
    if (group->request.workload_class == WorkloadClass::kRealtime) realtime_arrived_.store(true);
  }
  cv_.notify_one();
  PAGODA_LOG(Debug) << "request " << group->request.id << " queued: " << group->request.prompt.size()
                    << " prompt tokens, n=" << group->request.n;
  return group->channel;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mu_);
  EngineStats s = published_;
  s.requests_rejected_total = rejected_;
  s.requests_waiting = n_waiting_;
  // The tiers' writers run between steps: their own (thread-safe)
  // counters are read live, so an idle engine's figures are not stale.
  CopyTierStats(*kv_, /*restored=*/false, s);
  return s;
}

void Engine::Start() {
  PAGODA_CHECK(!started_.exchange(true)) << "engine started twice";
  FlushKvEvents();  // the initial AllBlocksCleared, before the engine thread owns the sink
  thread_ = std::thread([this] { Loop(); });
}

void Engine::Stop(std::chrono::milliseconds drain_timeout) {
  {
    std::lock_guard lock(mu_);
    accepting_ = false;
    if (!stopping_) {
      stopping_ = true;
      drain_deadline_ = EngineClock::now() + drain_timeout;
    }
  }
  cv_.notify_one();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    FailRemaining();  // never started: the caller is the thread that drove Step()
  }
  // The engine thread is gone: this thread owns the cache now. Prefix blocks
  // still in the pool go down too, so a restarted server finds whole prefixes.
  if (!kv_->tiers().empty()) {
    const int32_t n = kv_->OffloadCachedBlocks();
    for (kv::KvTier* t : kv_->tiers()) t->Flush();
    if (n > 0) {
      PAGODA_LOG(Info) << "KV offload: " << n << " cached blocks written down at shutdown";
    }
  }
}

bool Engine::Step() {
  PAGODA_CHECK(!started_.load()) << "Step() drives an engine that was not started";
  return StepOnce();
}

void Engine::Loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      const bool idle = inbox_.empty() && scheduler_.idle();
      if (stopping_ && (idle || EngineClock::now() >= drain_deadline_)) break;
      if (idle) {
        cv_.wait(lock, [&] { return stopping_ || !inbox_.empty(); });
        continue;
      }
    }
    StepOnce();
  }
  FailRemaining();
}

void Engine::FailRemaining() {
  TakeInbox();
  std::vector<Sequence*> left;
  for (const auto* list : {&scheduler_.running(), &scheduler_.waiting()}) {
    for (const auto& s : *list) left.push_back(s.get());
  }
  for (Sequence* s : left) {
    FinishWithError(s, FinishReason::kError, FailedPrecondition("the engine stopped before the request finished"));
  }
  Publish();
  FlushKvEvents();
}

bool Engine::StepOnce() {
  TakeInbox();
  ReapCancelledAndExpired(EngineClock::now());
  const bool ran = RunBatch();
  Publish();
  FlushKvEvents();
  if (!ran && kv_->prefetch_outstanding()) {
    // Only prompts whose prefix the tier loader is reading (or has just
    // read: the next step admits them) wait: give it the core for a moment
    // instead of spinning, and report work left.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return true;
  }
  return ran;
}

void Engine::TakeInbox() {
  std::vector<std::unique_ptr<Sequence>> in;
  {
    std::lock_guard lock(mu_);
    in.swap(inbox_);
    realtime_arrived_.store(false);
  }
  for (auto& s : in) scheduler_.AddWaiting(std::move(s));
}

void Engine::ReapCancelledAndExpired(EngineClock::time_point now) {
  std::vector<Sequence*> cancelled;
  std::vector<Sequence*> expired;
  for (const auto* list : {&scheduler_.running(), &scheduler_.waiting()}) {
    for (const auto& s : *list) {
      if (s->group->channel->cancelled(s->index)) {
        cancelled.push_back(s.get());
      } else if (s->request().deadline && now >= *s->request().deadline) {
        expired.push_back(s.get());
      }
    }
  }
  for (Sequence* s : cancelled) FinishWithError(s, FinishReason::kCancelled, Status::Ok());
  for (Sequence* s : expired) {
    FinishWithError(s, FinishReason::kError, DeadlineExceeded("the request's deadline passed after " +
                                                               std::to_string(s->n_generated()) + " tokens"));
  }
}

bool Engine::RunBatch() {
  bool allow_admit = true;
  for (;;) {
    if (!scheduler_.Schedule(plan_, allow_admit)) return false;
    if (StopCorruptSequences()) continue;  // plan again without them
    const size_t n_logits = static_cast<size_t>(plan_.n_logit_rows) * static_cast<size_t>(model_.n_vocab());
    // Prompt log-probability rows can outnumber the sequences.
    if (logits_.size() < n_logits) logits_.resize(n_logits);
    // A step of only lower-class work gives way to a real-time arrival at
    // once: the forward stops at its next layer, nothing is committed, and
    // the next step takes the real-time prompt (its lower-class sequences
    // paused, their KV kept).
    bool realtime = false, lower = false;
    for (const ScheduledChunk& c : plan_.chunks) {
      (ClassOf(*c.seq) == WorkloadClass::kRealtime ? realtime : lower) = true;
    }
    const bool interruptible = lower && !realtime;
    model_.set_interrupt(interruptible ? &realtime_arrived_ : nullptr);
    const size_t n_hidden = static_cast<size_t>(plan_.n_hidden_rows) * static_cast<size_t>(model_.config().n_embd);
    if (hidden_.size() < n_hidden) hidden_.resize(n_hidden);
    const Status st = model_.Run(plan_.batch, *kv_,
                                 ForwardOutputs{std::span<float>(logits_.data(), n_logits),
                                                std::span<float>(hidden_.data(), n_hidden)});
    model_.set_interrupt(nullptr);
    if (st.ok()) break;
    if (interruptible && st.code() == StatusCode::kDeadlineExceeded && realtime_arrived_.load()) {
      ++stats_.steps_interrupted_total;
      return true;
    }
    if (st.code() != StatusCode::kResourceExhausted) {
      PAGODA_LOG(Error) << "forward pass of " << plan_.batch.size() << " tokens failed: " << st.ToString();
      std::vector<Sequence*> failed;
      for (const ScheduledChunk& c : plan_.chunks) failed.push_back(c.seq);
      for (Sequence* s : failed) FinishWithError(s, FinishReason::kError, st);
      return true;
    }
    // KV cache full: preempt by recompute and retry without admitting anyone.
    if (scheduler_.running().size() <= 1) {
      Sequence* s = scheduler_.running().front().get();
      FinishWithError(s, FinishReason::kError,
                      ResourceExhausted("the KV cache cannot hold the sequence (" +
                                        std::to_string(s->tokens.size()) + " tokens)"));
      continue;
    }
    Sequence* victim = scheduler_.PickVictim();
    PAGODA_LOG(Debug) << "KV cache full: preempting request " << victim->request().id << " sequence "
                      << victim->index << " (" << victim->tokens.size() << " tokens)";
    scheduler_.Preempt(victim);
    ++stats_.preemptions_total;
    allow_admit = false;
  }
  scheduler_.Commit(plan_);
  stats_.iteration_tokens.Observe(static_cast<double>(plan_.batch.size()));
  // Copy the pointers: finishing a sequence destroys it.
  std::vector<ScheduledChunk> chunks = plan_.chunks;
  int64_t row = 0, hidden_row = 0;
  const int64_t n_embd = model_.config().n_embd;
  for (const ScheduledChunk& c : chunks) {
    NoteAdmitted(*c.seq);
    for (int32_t i = 0; i < c.n_prompt_rows; ++i, ++row) {
      EmitPromptLogprob(*c.seq, c.begin + i + 1, logits_.data() + row * model_.n_vocab());
    }
    if (c.n_hidden_rows > 0) {
      Pool(*c.seq, c.begin, std::span<const float>(hidden_.data() + hidden_row * n_embd, c.n_hidden_rows * n_embd));
      hidden_row += c.n_hidden_rows;
    }
    if (!c.sample) continue;
    const float* logits = c.logit_row ? logits_.data() + row * model_.n_vocab() : nullptr;
    row += c.logit_row;
    if (c.seq->prefill_only()) {
      FinishPrefill(*c.seq, logits);
    } else {
      SampleAndEmit(*c.seq, logits);
    }
  }
  return true;
}

void Engine::EmitPromptLogprob(Sequence& s, int32_t position, const float* logits) {
  if (position <= s.n_prompt_reported) return;  // reported before a preemption
  s.n_prompt_reported = position;
  const std::span<const float> raw(logits, static_cast<size_t>(model_.n_vocab()));
  EngineEvent ev;
  ev.index = s.index;
  ev.prompt = true;
  ev.prompt_position = position;
  ev.token = s.tokens[position];
  ev.logprob = TokenLogprobOf(raw, ev.token);
  if (s.request().top_logprobs > 0) ev.top_logprobs = TopLogprobs(raw, s.request().top_logprobs);
  s.group->channel->Push(std::move(ev));
}

void Engine::NoteAdmitted(Sequence& s) {
  if (s.admitted_once) return;
  s.admitted_once = true;
  s.admitted_time = EngineClock::now();
  stats_.prompt_tokens_total += s.n_prompt;
  stats_.request_queue_time.Observe(Seconds(s.admitted_time - s.group->arrival));
}

void Engine::SampleAndEmit(Sequence& s, const float* logits) {
  const EngineRequest& r = s.request();
  const std::span<const float> raw(logits, static_cast<size_t>(model_.n_vocab()));
  std::copy(raw.begin(), raw.end(), work_.begin());
  Result<const grammar::TokenBitmask*> mask = GrammarMask(s);
  if (!mask.ok()) {
    FinishWithError(&s, FinishReason::kError, mask.status());
    return;
  }
  const TokenId id = s.sampler->Sample(work_, s.tokens, static_cast<size_t>(s.n_prompt), *mask);
  EngineEvent ev;
  ev.index = s.index;
  ev.token = id;
  if (r.logprobs || r.top_logprobs > 0) ev.logprob = TokenLogprobOf(raw, id);
  if (r.top_logprobs > 0) ev.top_logprobs = TopLogprobs(raw, r.top_logprobs);
  s.tokens.push_back(id);
  ++stats_.generation_tokens_total;
  const bool grammar_done = GrammarAccept(s, id);

  const auto now = EngineClock::now();
  if (!s.first_token_time) {
    s.first_token_time = now;
    stats_.time_to_first_token.Observe(Seconds(now - s.group->arrival));
  } else {
    stats_.inter_token_latency.Observe(Seconds(now - s.last_token_time));
  }
  s.last_token_time = now;

  if (std::find(r.stop_tokens.begin(), r.stop_tokens.end(), id) != r.stop_tokens.end()) {
    ev.finish = FinishReason::kStop;
  } else if (!r.ignore_eog && options_.is_eog && options_.is_eog(id)) {
    ev.finish = FinishReason::kEog;
  } else if (s.n_generated() >= r.max_tokens || static_cast<int32_t>(s.tokens.size()) > options_.n_ctx) {
    // As Generator: the last sampled token is never fed back, so n_ctx
    // computed positions allow n_ctx + 1 tokens.
    ev.finish = FinishReason::kLength;
  }
  if (ev.is_final()) {
    Finish(&s, std::move(ev));
  } else if (grammar_done) {
    // The token goes out as usual; the final event carries none (kStop).
    s.group->channel->Push(std::move(ev));
    EngineEvent done;
    done.index = s.index;
    done.finish = FinishReason::kStop;
    Finish(&s, std::move(done));
  } else {
    s.group->channel->Push(std::move(ev));
  }
}

void Engine::FinishWithError(Sequence* s, FinishReason reason, Status error) {
  EngineEvent ev;
  ev.index = s->index;
  ev.finish = reason;
  ev.error = std::move(error);
  Finish(s, std::move(ev));
}

void Engine::Finish(Sequence* s, EngineEvent ev) {
  ev.usage.tokens_prompt = s->n_prompt;
  ev.usage.tokens_cached = s->n_cached;
  ev.usage.tokens_completion = s->n_generated();
  switch (ev.finish) {
    case FinishReason::kCancelled: ++stats_.requests_cancelled_total; break;
    case FinishReason::kError: ++stats_.requests_failed_total; break;
    default: ++stats_.requests_finished_total; break;
  }
  stats_.e2e_request_latency.Observe(Seconds(EngineClock::now() - s->group->arrival));
  stats_.request_prompt_tokens.Observe(s->n_prompt);
  stats_.request_generation_tokens.Observe(s->n_generated());
  RequestGroup& group = *s->group;
  group.max_generated = std::max(group.max_generated, s->n_generated());
  if (++group.n_finished == group.request.n) stats_.request_max_generation_tokens.Observe(group.max_generated);
  if (s->admitted_once && s->first_token_time) {
    stats_.request_prefill_time.Observe(Seconds(*s->first_token_time - s->admitted_time));
    stats_.request_decode_time.Observe(Seconds(s->last_token_time - *s->first_token_time));
  }
  PAGODA_LOG(Debug) << "request " << s->request().id << " sequence " << s->index << " finished ("
                    << FinishReasonName(ev.finish) << "): " << ev.usage.tokens_prompt << " prompt, "
                    << ev.usage.tokens_cached << " cached, " << ev.usage.tokens_completion << " completion tokens";
  std::unique_ptr<Sequence> owned = scheduler_.Remove(s);
  if (HoldRanked(*owned, ev)) return;
  owned->group->channel->Push(std::move(ev));
}

void Engine::Publish() {
  stats_.requests_running = static_cast<int64_t>(scheduler_.running().size());
  stats_.preemptions_class_total = scheduler_.preemptions_class();
  stats_.preemptions_share_total = scheduler_.preemptions_share();
  stats_.requests_running_by_class.fill(0);
  stats_.requests_waiting_by_class.fill(0);
  for (const auto& s : scheduler_.running()) ++stats_.requests_running_by_class[static_cast<size_t>(ClassOf(*s))];
  for (const auto& s : scheduler_.waiting()) ++stats_.requests_waiting_by_class[static_cast<size_t>(ClassOf(*s))];
  stats_.kv_usage = kv_->usage();
  stats_.kv_capacity_tokens = static_cast<int64_t>(kv_->pool().n_blocks()) * kv_->block_size();
  stats_.prefix_cache_queries = kv_->prefix_cache().stats().tokens_queried;
  stats_.prefix_cache_hits = kv_->prefix_cache().stats().tokens_hit;
  CopyTierStats(*kv_, /*restored=*/true, stats_);
  std::lock_guard lock(mu_);
  n_waiting_ = static_cast<int64_t>(inbox_.size() + scheduler_.waiting().size());
  published_ = stats_;
  for (const auto& s : inbox_) ++published_.requests_waiting_by_class[static_cast<size_t>(ClassOf(*s))];
}

void Engine::FlushKvEvents() {
  if (!kv_events_) return;
  kv_->DrainTierEvents();
  if (kv_events_->empty()) return;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  options_.kv_event_sink(kv_events_->Take(now));
}

}  // namespace pagoda
