// Log-probabilities of raw logits: log-softmax over the whole vocabulary,
// before any sampler step (llama.cpp's n_probs with post_sampling_probs off,
// and the convention of OpenAI's logprobs / top_logprobs).
#pragma once

#include <span>
#include <vector>

#include "sampling/sampling_params.h"

namespace pagoda {

struct TokenLogprob {
  TokenId id;
  float logprob;  // <= 0; -inf for a token with logit -inf
};

// log(sum_i exp(logits[i])), in double; NaN entries are skipped.
// -inf for an empty row or one that is all -inf.
double LogSumExp(std::span<const float> logits);

// logprob of one token: logits[id] - LogSumExp(logits).
float TokenLogprobOf(std::span<const float> logits, TokenId id);

// The n most likely tokens, best first (ties: lower id first); fewer when the
// row is shorter. NaN entries are skipped.
std::vector<TokenLogprob> TopLogprobs(std::span<const float> logits, int n);

}  // namespace pagoda
