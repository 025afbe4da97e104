// The individual steps of the sampling chain, exposed so that tests can check
// each one against a reference computation. Sampler (sampler.h) runs them in
// order; most callers want Sampler, not these.
//
// A candidate list holds the tokens still in play with their logits. Steps
// that need an order sort it by (logit descending, id ascending): a total
// order, so ties are broken the same way on every run and every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "sampling/sampling_params.h"

namespace pagoda {

struct Candidate {
  TokenId id;
  float logit;
};

// (logit descending, id ascending).
inline bool CandidateBefore(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Working buffers reused between calls (a Sampler owns one), so that steps
// over a 150k-token row do not allocate.
struct SamplingScratch {
  std::vector<int32_t> counts;    // [n_vocab], all zero between calls
  std::vector<float> weights;
  std::vector<uint16_t> buckets;
  std::vector<double> hist;
  std::vector<Candidate> tmp;
};

// logits[id] += bias. Ids outside the span are ignored (ValidateForVocab
// rejects them up front).
void ApplyLogitBias(const std::map<TokenId, float>& bias, std::span<float> logits);

// Repetition, presence and frequency penalties (see SamplingParams).
// history = prompt tokens then generated tokens; the first n_prompt are the
// prompt. Ids outside [0, logits.size()) are ignored.
void ApplyPenalties(const SamplingParams& params, std::span<const TokenId> history,
                    size_t n_prompt, std::span<float> logits, SamplingScratch& scratch);

// Lowest id among the largest logits; NaN never wins. 0 if all are NaN.
TokenId Argmax(std::span<const float> logits);

// Keeps the k best, leaving the list sorted and *sorted set; O(n log k) via
// partial_sort. k <= 0 or k >= size: no-op.
void TopK(int32_t k, std::vector<Candidate>& cands, bool* sorted);

// Keeps the smallest best-first prefix whose softmax mass (over the list as
// given) is >= p, at least one token. A sorted or short list is scanned in
// order (and left sorted); a long unsorted one is bucketed by logit and only
// the bucket where the mass crosses p is sorted, so 150k tokens cost a few
// passes; the kept tokens are then in no particular order (*sorted false).
void TopP(float p, std::vector<Candidate>& cands, bool* sorted, SamplingScratch& scratch);

// Keeps tokens with p >= min_p * p_max (computed on logits:
// logit >= max_logit + log(min_p)); order is preserved.
void MinP(float min_p, std::vector<Candidate>& cands);

}  // namespace pagoda
