#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sampling/fast_exp.h"

namespace pagoda {

Result<Sampler> Sampler::Create(const SamplingParams& params, int32_t n_vocab) {
  if (n_vocab <= 0) return InvalidArgument("sampler vocabulary size must be > 0");
  PAGODA_RETURN_IF_ERROR(params.ValidateForVocab(n_vocab));
  return Sampler(params, n_vocab);
}

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {}

TokenId Sampler::Sample(std::span<float> logits, std::span<const TokenId> history,
                        size_t n_prompt, const grammar::TokenBitmask* mask) {
  PAGODA_CHECK(logits.size() == size_t(n_vocab_))
      << "logits row has " << logits.size() << " entries, vocabulary " << n_vocab_;
  ApplyLogitBias(params_.logit_bias, logits);
  ApplyPenalties(params_, history, n_prompt, logits, scratch_);
  if (mask == nullptr) return SampleFiltered(logits);
  mask->ApplyTo(logits);
  const TokenId id = SampleFiltered(logits);
  if (mask->Test(id)) return id;
  // Every allowed logit is -inf or NaN (a -inf bias, say): the lowest allowed id.
  for (TokenId t = 0; t < mask->size(); ++t) {
    if (mask->Test(t)) return t;
  }
  return id;
}

TokenId Sampler::SampleFiltered(std::span<float> logits) {
  if (params_.is_greedy()) return Argmax(logits);

  const bool truncate = (params_.top_k > 0 && params_.top_k < n_vocab_) ||
                        params_.top_p < 1.0f || params_.min_p > 0.0f;
  if (!truncate) return SampleAll(logits);

  cands_.clear();
  cands_.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    // -inf (forbidden) and NaN never take part.
    if (logits[i] > -std::numeric_limits<float>::infinity()) {
      cands_.push_back({TokenId(i), logits[i]});
    }
  }
  if (cands_.empty()) return Argmax(logits);
  bool sorted = false;
  TopK(params_.top_k, cands_, &sorted);
  TopP(params_.top_p, cands_, &sorted, scratch_);
  MinP(params_.min_p, cands_);
  return SampleCandidates();
}

// Softmax draw over the whole row, without building a candidate list.
TokenId Sampler::SampleAll(std::span<const float> logits) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (float v : logits) max_logit = std::max(max_logit, v);  // max() drops NaN here
  if (!(max_logit > -std::numeric_limits<float>::infinity())) return Argmax(logits);
  weights_.resize(logits.size());
  // -inf and NaN logits get weight 0; the max gets 1, so the sum is >= 1.
  const double sum = ExpTerms(logits, max_logit, 1.0f / params_.temperature, weights_.data());
  return TokenId(DrawIndex(weights_, rng_.NextDouble() * sum));
}

TokenId Sampler::SampleCandidates() {
  cand_logits_.resize(cands_.size());
  float max_logit = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < cands_.size(); ++i) {
    cand_logits_[i] = cands_[i].logit;
    max_logit = std::max(max_logit, cands_[i].logit);
  }
  weights_.resize(cands_.size());
  const double sum = ExpTerms(cand_logits_, max_logit, 1.0f / params_.temperature, weights_.data());
  return cands_[DrawIndex(weights_, rng_.NextDouble() * sum)].id;
}

}  // namespace pagoda
