// EngineRequest and EngineEvent: what the server hands the engine and what
// the engine streams back, as plain values. A request is already tokenized;
// the engine never sees prompt text (so none can reach a log).
// Built on any thread, moved into Engine::Submit; events are produced on the
// engine thread and read through a RequestChannel (request_channel.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/workload_class.h"
#include "kv/block_sink.h"
#include "model/model_config.h"
#include "sampling/logprobs.h"
#include "sampling/sampling_params.h"

namespace pagoda {

namespace grammar {
class Grammar;
}

// Structured output enforced while decoding (sampling/grammar/): each token
// is sampled from the tokens the grammar allows (logprobs stay the model's
// raw distribution). Needs EngineOptions::grammar_vocab. The sequence
// finishes with kStop once the grammar is complete and nothing may follow,
// with an error ("grammar allows no next token") if no token can continue,
// and the budget is managed so that max_tokens never cuts a structure short
// (docs/GRAMMAR.md).
struct GrammarConstraint {
  std::shared_ptr<const grammar::Grammar> grammar;
  // Non-empty: the grammar applies only after these bytes have appeared in
  // the generated text (e.g. "</think>" for reasoning models); the tokens up
  // to and including them are unconstrained.
  std::string delay_until;
};

// Prefill-only work (embeddings, relevance scores; docs/EMBEDDINGS.md): the
// prompt is computed and nothing is sampled or decoded; the sequence's final
// event carries the result (EngineEvent::embedding / score).
struct PrefillTask {
  enum class Kind : uint8_t {
    kEmbed,  // the pooled final hidden state
    kScore,  // a relevance score: the classifier head over the pooled state
             // (cross-encoders, pooling kRank) or, with score_yes/score_no
             // set, P(yes) = softmax(logit[no], logit[yes]) at the last
             // position (decoder rerankers such as Qwen3-Reranker)
  };
  Kind kind = Kind::kEmbed;
  PoolingType pooling = PoolingType::kLast;  // kMean, kCls or kLast (kRank: the CLS state)
  bool normalize = true;   // kEmbed: L2-normalise (after truncation)
  int32_t dimensions = 0;  // kEmbed: keep the first N dimensions (Matryoshka); 0 = all
  TokenId score_yes = -1, score_no = -1;
  // Candidates sharing the prompt as prefix: sequence i computes prompt +
  // suffixes[i] (EngineRequest::n must equal their count). Sequence 0 fills
  // the shared prefix's blocks first, the others adopt them, so the prefix is
  // computed once. Their final events leave together, best score first
  // (EngineEvent::rank), and only the top_n best carry a score (0 = all).
  std::vector<std::vector<TokenId>> suffixes;
  int32_t top_n = 0;
};

struct EngineRequest {
  std::string id;                  // for logs and the response; never the prompt
  std::vector<TokenId> prompt;     // BOS included if wanted; non-empty, < n_ctx tokens
  int32_t max_tokens = 128;        // > 0; generation also stops at the context size
  SamplingParams sampling;         // sequence i of n samples with seed + i
  std::vector<TokenId> stop_tokens;  // extra ids that end generation (finish kStop)
  bool ignore_eog = false;         // keep going past end-of-generation tokens
  // n > 1: n independent sequences over the same prompt, reported with their
  // index. Sequences 1..n-1 are admitted once sequence 0 has filled the
  // prompt's blocks, so with prefix caching they adopt them instead of
  // recomputing.
  int32_t n = 1;
  bool logprobs = false;           // report the chosen token's log-probability
  int32_t top_logprobs = 0;        // and the N most likely tokens, N in [0, 20]
  // Also the log-probability (and top_logprobs) of each prompt token after
  // the first, given the tokens before it (completions echo + logprobs), as
  // events with `prompt` set from sequence 0 before its first sampled token.
  // That sequence computes its whole prompt (no prefix-cache adoption); its
  // siblings adopt it as usual.
  bool prompt_logprobs = false;
  std::string cache_salt;          // isolates prefix-cache entries (per tenant)
  std::optional<std::chrono::steady_clock::time_point> deadline;  // finish with an error past it
  // For scheduling policies (docs/SCHEDULING.md). The workload class ranks
  // above everything else: a higher class is admitted first, pauses lower
  // ones while its prompt is computed, and preempts them when it needs their
  // slots or blocks. Within a class, the fair-share policy admits higher
  // priorities first and shares each priority between tenants in proportion
  // to their weights; FCFS only uses priority to pick a preemption victim.
  // Set from the gateway's signed tenant headers.
  WorkloadClass workload_class = WorkloadClass::kInteractive;
  int32_t priority = 0;            // within a class: higher is more important (provisioned > serverless)
  std::string tenant;              // "" is the anonymous tenant
  double weight = 1;               // fair-share weight, finite and > 0
  std::optional<GrammarConstraint> constraint;  // structured output (per sequence state)
  // Prefill/decode disaggregation (docs/KV_OFFLOAD.md): every full prompt
  // block of sequence 0 goes here as soon as it is computed or adopted
  // (kv/block_sink.h). Needs prefix caching; the sink must outlive the
  // request's final event.
  std::shared_ptr<kv::BlockSink> kv_export;
  // Set: a prefill-only request (max_tokens is ignored, sampling unused).
  // max_tokens = 0 without it: the prompt is computed (for prompt_logprobs)
  // and the sequence ends with kLength having generated nothing.
  std::optional<PrefillTask> prefill;
};

enum class FinishReason : uint8_t {
  kNone,       // not finished: a token event
  kStop,       // a stop token (the event's token is that stop token), or a grammar
               // constraint completed (token -1: its last token came in the previous event)
  kLength,     // max_tokens or the context size reached
  kEog,        // an end-of-generation token (the event's token is it)
  kCancelled,  // the consumer cancelled (client disconnect)
  kError,      // see EngineEvent::error: deadline passed (DeadlineExceeded), KV cache
               // too small (ResourceExhausted), engine stopped (FailedPrecondition),
               // model failure
};
const char* FinishReasonName(FinishReason r);

// Token counts of one sequence (OpenAI usage; cached = prompt_tokens_details.cached_tokens).
struct Usage {
  int32_t tokens_prompt = 0;
  int32_t tokens_cached = 0;      // prompt tokens adopted from the prefix cache
  int32_t tokens_completion = 0;
};

struct EngineEvent {
  int32_t index = 0;              // which of the request's n sequences
  // The sampled token, or -1 on a final event without one (cancelled, error).
  TokenId token = -1;
  float logprob = 0;              // set when the request asked for logprobs
  std::vector<TokenLogprob> top_logprobs;  // best first, top_logprobs of them
  FinishReason finish = FinishReason::kNone;
  Status error;                   // finish == kError
  Usage usage;                    // set on the final event of the sequence
  // EngineRequest::prompt_logprobs: `token` is the prompt token at position
  // `prompt_position` (>= 1), not a generated one; never final.
  bool prompt = false;
  int32_t prompt_position = 0;
  // EngineRequest::prefill, on the final event: the pooled vector (kEmbed)
  // or the relevance score (kScore). With suffixes: the sequence's place in
  // the ranking (0 = best), and has_score false beyond top_n.
  std::vector<float> embedding;
  float score = 0;
  bool has_score = false;
  int32_t rank = -1;

  bool is_final() const { return finish != FinishReason::kNone; }
  bool has_token() const { return token >= 0; }
};

}  // namespace pagoda
