// SamplingParams: the per-request sampling configuration, a plain value.
// Defaults leave every filter and penalty off at temperature 1 (pure
// sampling from the softmax). Validate() checks ranges; ValidateForVocab()
// also checks that logit_bias ids exist in the model's vocabulary.
#pragma once

#include <cstdint>
#include <map>

#include "base/status.h"

namespace pagoda {

using TokenId = int32_t;

struct SamplingParams {
  // 0 = greedy (argmax, ties to the lowest id). Must be >= 0 and finite.
  float temperature = 1.0f;
  // Keep the k most likely tokens; 0 (or >= vocab) disables. Must be >= 0.
  int32_t top_k = 0;
  // Nucleus: keep the smallest prefix (by probability) whose mass is >= top_p.
  // In (0, 1]; 1 disables.
  float top_p = 1.0f;
  // Keep tokens with p >= min_p * p_max. In [0, 1]; 0 disables.
  float min_p = 0.0f;

  // llama.cpp / HF repetition penalty over the distinct tokens of the last
  // penalty_last_n history tokens (prompt included): a positive logit is
  // divided by it, a negative one multiplied. > 0; 1 disables.
  float repetition_penalty = 1.0f;
  // Window for repetition_penalty: 0 disables, -1 = the whole history.
  int32_t penalty_last_n = 64;
  // OpenAI semantics over the generated tokens only:
  //   logit[j] -= count[j] * frequency_penalty + (count[j] > 0) * presence_penalty
  // Each in [-2, 2]; 0 disables.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;

  // Added to the raw logits first; -infinity forbids a token.
  std::map<TokenId, float> logit_bias;

  // The whole random stream of a Sampler derives from this seed, so equal
  // params, logits and histories give the same tokens.
  uint64_t seed = 0;

  bool is_greedy() const { return temperature == 0.0f; }

  // Range checks independent of the model; the message names the field.
  Status Validate() const;
  // Validate() plus: every logit_bias id in [0, n_vocab), every bias not NaN
  // and not +infinity.
  Status ValidateForVocab(int32_t n_vocab) const;
};

}  // namespace pagoda
