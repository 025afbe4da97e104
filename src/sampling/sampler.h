// Sampler: picks the next token from a row of logits. One Sampler per
// sequence; it owns that sequence's random stream (seeded from
// SamplingParams::seed), so it is not shared between threads: the engine
// thread that owns the sequence calls it.
//
// Order of operations (llama.cpp's default chain):
//   1. logit bias           (SamplingParams::logit_bias)
//   2. penalties            repetition (last penalty_last_n history tokens),
//                           presence and frequency (generated tokens)
//   2b. grammar mask        tokens outside it become -inf (when one is given)
//   3. temperature == 0  -> argmax, ties to the lowest id; done
//   4. top-k -> 5. top-p -> 6. min-p   (all on the temperature-1 distribution)
//   7. temperature: logits / T
//   8. draw from the softmax of what is left
// Filters keep at least one token. With no filter active the draw runs
// straight over the logits (two passes, no copy, no sort). If every token is
// forbidden (-inf or NaN), the result is Argmax of the penalised logits.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "base/status.h"
#include "sampling/grammar/token_bitmask.h"
#include "sampling/rng.h"
#include "sampling/sampler_steps.h"
#include "sampling/sampling_params.h"

namespace pagoda {

class Sampler {
 public:
  // Validates params (ValidateForVocab) first.
  static Result<Sampler> Create(const SamplingParams& params, int32_t n_vocab);

  // logits: [n_vocab], modified in place (bias and penalties are added), so
  // take log-probabilities (logprobs.h) before calling this.
  // history: the sequence so far, prompt first; n_prompt of them are the
  // prompt (they count for the repetition penalty only).
  // mask: when given (a grammar constraint), only its tokens can be drawn;
  // if it allows none, the result is Argmax as above. The caller takes
  // log-probabilities from the raw logits, before the mask.
  TokenId Sample(std::span<float> logits, std::span<const TokenId> history, size_t n_prompt = 0,
                 const grammar::TokenBitmask* mask = nullptr);

  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }

 private:
  Sampler(const SamplingParams& params, int32_t n_vocab);
  TokenId SampleFiltered(std::span<float> logits);
  TokenId SampleAll(std::span<const float> logits);
  TokenId SampleCandidates();

  SamplingParams params_;
  int32_t n_vocab_;
  Rng rng_;
  std::vector<Candidate> cands_;   // reused between calls
  SamplingScratch scratch_;
  std::vector<float> cand_logits_;
  std::vector<float> weights_;
};

}  // namespace pagoda
