// Sequence: one generation stream inside the engine (a request with n > 1
// has n of them, sharing a RequestGroup). Built by Engine::Submit on the
// caller's thread and handed to the engine thread through its inbox; from
// then on engine thread only: moved between the scheduler's waiting and
// running lists, destroyed when finished.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/engine_request.h"
#include "engine/request_channel.h"
#include "sampling/grammar/token_matcher.h"
#include "sampling/sampler.h"

namespace pagoda {

using EngineClock = std::chrono::steady_clock;

// What the sequences of one request share.
struct RequestGroup {
  EngineRequest request;
  RequestHandle channel;
  EngineClock::time_point arrival;
  // Sequence 0 has computed the whole prompt (or finished): its full blocks
  // are in the prefix cache, so its siblings may be admitted.
  bool prefix_ready = false;
  // PrefillTask::suffixes: the candidates' final events, held until all are in.
  std::vector<EngineEvent> ranked;
  // Finished sequences, and the most tokens one of them generated (the
  // request's max generation tokens, observed when the last one ends).
  int32_t n_finished = 0;
  int32_t max_generated = 0;
};

struct Sequence {
  std::shared_ptr<RequestGroup> group;
  int32_t index = 0;        // within the request's n
  uint64_t arrival = 0;     // engine-wide submission order (FCFS key); kept across preemption
  // Prompt, then generated tokens. After a preemption all of them are
  // recomputed as one longer prompt; n_prompt stays the request's.
  std::vector<TokenId> tokens;
  int32_t n_prompt = 0;
  int32_t n_computed = 0;   // positions in the KV cache
  int32_t n_cached = 0;     // prompt tokens adopted at first admission (usage)
  int32_t slot = -1;        // KV sequence id while running, else -1
  bool admitted_once = false;
  // The scheduling policy's own index for this sequence (the fair-share
  // policy's tenant slot); -1 until it sets one.
  int32_t policy_slot = -1;
  // EngineRequest::prompt_logprobs: prompt positions reported so far (their
  // events are not sent again when a preempted sequence recomputes).
  int32_t n_prompt_reported = 0;
  // EngineRequest::kv_export: prompt blocks handed to the sink so far.
  int32_t n_exported = 0;
  std::optional<Sampler> sampler;
  // EngineRequest::constraint: this sequence's grammar state; active once
  // delay_until has appeared (grammar_tail holds the last bytes seen so far).
  std::optional<grammar::TokenMatcher> grammar;
  bool grammar_active = false;
  std::string grammar_tail;
  // EngineRequest::prefill: the pooled state so far (mean: the sum of the
  // rows in position order, in double so chunking cannot change it).
  std::vector<double> pool_sum;
  int32_t n_pooled = 0;
  EngineClock::time_point admitted_time;  // first admission (set with admitted_once)
  std::optional<EngineClock::time_point> first_token_time;
  EngineClock::time_point last_token_time;

  const EngineRequest& request() const { return group->request; }
  int32_t n_generated() const { return static_cast<int32_t>(tokens.size()) - n_prompt; }
  // Tokens the next steps must compute before the next sample (>= 1 while running).
  int32_t n_pending() const { return static_cast<int32_t>(tokens.size()) - n_computed; }
  // Still has prompt tokens' log-probabilities to report (computes their
  // rows, adopts no prefix); a preempted sequence that reported them all
  // recomputes like any other.
  bool reports_prompt() const {
    return index == 0 && group->request.prompt_logprobs && n_prompt_reported < n_prompt - 1;
  }
  // Computes its prompt and samples nothing (EngineRequest::prefill, or max_tokens 0).
  bool prefill_only() const { return group->request.prefill.has_value() || group->request.max_tokens == 0; }
  // The last position's logits are needed: to sample, or for a yes/no score.
  bool wants_last_logits() const {
    const auto& p = group->request.prefill;
    if (!p) return group->request.max_tokens > 0;
    return p->kind == PrefillTask::Kind::kScore && p->score_yes >= 0;
  }
  // Position p's final hidden state is needed for pooling (`last`: p is the last one).
  bool wants_hidden(int32_t p, bool last) const {
    const auto& t = group->request.prefill;
    if (!t || wants_last_logits()) return false;
    switch (t->pooling) {
      case PoolingType::kMean: return p < n_prompt;
      case PoolingType::kCls:
      case PoolingType::kRank: return p == 0;
      default: return last;
    }
  }
  // Needs rows of positions a cached prefix would skip (prompt logprobs,
  // mean or CLS pooling): computes its whole prompt, adopts no prefix.
  bool computes_whole_prompt() const {
    if (reports_prompt()) return true;
    const auto& t = group->request.prefill;
    return t && !wants_last_logits() && t->pooling != PoolingType::kLast && n_computed < n_prompt;
  }
};

}  // namespace pagoda
