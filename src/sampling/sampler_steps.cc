#include "sampling/sampler_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sampling/fast_exp.h"

namespace pagoda {
namespace {

inline bool InRange(TokenId id, size_t n) { return id >= 0 && static_cast<size_t>(id) < n; }

}  // namespace

void ApplyLogitBias(const std::map<TokenId, float>& bias, std::span<float> logits) {
  for (const auto& [id, b] : bias) {
    if (InRange(id, logits.size())) logits[id] += b;
  }
}

void ApplyPenalties(const SamplingParams& params, std::span<const TokenId> history,
                    size_t n_prompt, std::span<float> logits, SamplingScratch& ss) {
  std::vector<int32_t>& scratch = ss.counts;
  const size_t n = logits.size();
  if (scratch.size() < n) scratch.assign(n, 0);
  n_prompt = std::min(n_prompt, history.size());

  if (params.repetition_penalty != 1.0f && params.penalty_last_n != 0) {
    size_t window = history.size();
    if (params.penalty_last_n > 0) window = std::min(window, size_t(params.penalty_last_n));
    const auto recent = history.last(window);
    const float rp = params.repetition_penalty;
    for (TokenId id : recent) {
      if (!InRange(id, n) || scratch[id] != 0) continue;  // each distinct token once
      scratch[id] = 1;
      logits[id] = logits[id] > 0.0f ? logits[id] / rp : logits[id] * rp;
    }
    for (TokenId id : recent) {
      if (InRange(id, n)) scratch[id] = 0;
    }
  }

  if (params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
    const auto generated = history.subspan(n_prompt);
    for (TokenId id : generated) {
      if (InRange(id, n)) ++scratch[id];
    }
    for (TokenId id : generated) {
      if (!InRange(id, n) || scratch[id] == 0) continue;
      logits[id] -= float(scratch[id]) * params.frequency_penalty + params.presence_penalty;
      scratch[id] = 0;
    }
  }
}

TokenId Argmax(std::span<const float> logits) {
  TokenId best = 0;
  float best_v = -std::numeric_limits<float>::infinity();
  bool found = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i];
    if (std::isnan(v)) continue;
    if (!found || v > best_v) {
      best = TokenId(i);
      best_v = v;
      found = true;
    }
  }
  return best;
}

void TopK(int32_t k, std::vector<Candidate>& cands, bool* sorted) {
  if (k <= 0 || size_t(k) >= cands.size()) return;  // disabled: no need to sort
  if (*sorted) {
    cands.resize(k);
    return;
  }
  std::partial_sort(cands.begin(), cands.begin() + k, cands.end(), CandidateBefore);
  cands.resize(k);
  *sorted = true;
}

namespace {

// Keeps the best-first prefix of an already sorted list.
void TopPSorted(float p, float max_logit, std::vector<Candidate>& cands) {
  double sum = 0.0;
  for (const Candidate& c : cands) sum += FastExp(c.logit - max_logit);
  const double target = double(p) * sum;
  double cum = 0.0;
  for (size_t i = 0; i < cands.size(); ++i) {
    cum += FastExp(cands[i].logit - max_logit);
    if (cum >= target) {
      cands.resize(i + 1);
      return;
    }
  }
}

constexpr size_t kTopPBuckets = 4096;

}  // namespace

void TopP(float p, std::vector<Candidate>& cands, bool* sorted, SamplingScratch& scratch) {
  if (p >= 1.0f || cands.size() <= 1) return;
  float max_logit = -std::numeric_limits<float>::infinity();
  float min_logit = std::numeric_limits<float>::infinity();
  for (const Candidate& c : cands) {
    max_logit = std::max(max_logit, c.logit);
    min_logit = std::min(min_logit, c.logit);
  }
  if (*sorted || cands.size() <= 1024) {
    if (!*sorted) std::sort(cands.begin(), cands.end(), CandidateBefore);
    *sorted = true;
    TopPSorted(p, max_logit, cands);
    return;
  }
  // Large unsorted list (no top-k): bucket the logits (monotonically, so
  // buckets never reorder tokens), find the bucket where the mass from the
  // top crosses p, and sort only that bucket. Everything above it is kept,
  // everything below dropped; the kept set is exactly the sorted prefix.
  const size_t n = cands.size();
  std::vector<float>& w = scratch.weights;
  std::vector<uint16_t>& b = scratch.buckets;
  w.resize(n);
  b.resize(n);
  const float range = max_logit - min_logit;
  const float scale = range > 0.0f ? float(kTopPBuckets - 1) / range : 0.0f;
  for (size_t i = 0; i < n; ++i) {
    w[i] = FastExp(cands[i].logit - max_logit);
    b[i] = uint16_t(std::min((max_logit - cands[i].logit) * scale, float(kTopPBuckets - 1)));
  }
  // Four interleaved histograms: runs of tokens in one bucket would
  // otherwise serialise on a single accumulator.
  std::vector<double>& hist = scratch.hist;
  hist.assign(4 * kTopPBuckets, 0.0);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (size_t j = 0; j < 4; ++j) hist[j * kTopPBuckets + b[i + j]] += w[i + j];
  }
  for (; i < n; ++i) hist[b[i]] += w[i];
  std::vector<double> mass(kTopPBuckets);
  double sum = 0.0;
  for (size_t k = 0; k < kTopPBuckets; ++k) {
    mass[k] = hist[k] + hist[kTopPBuckets + k] + hist[2 * kTopPBuckets + k] +
              hist[3 * kTopPBuckets + k];
    sum += mass[k];
  }
  const double target = double(p) * sum;
  double cum = 0.0;
  size_t cross = 0;
  for (; cross < kTopPBuckets - 1 && cum + mass[cross] < target; ++cross) cum += mass[cross];

  // Keep the buckets above `cross` in place; collect bucket `cross` aside.
  std::vector<Candidate>& in_cross = scratch.tmp;
  in_cross.clear();
  size_t kept = 0;
  for (size_t k = 0; k < n; ++k) {
    if (b[k] < cross) {
      cands[kept++] = cands[k];
    } else if (b[k] == cross) {
      in_cross.push_back(cands[k]);
    }
  }
  std::sort(in_cross.begin(), in_cross.end(), CandidateBefore);
  for (const Candidate& c : in_cross) {
    cands[kept++] = c;
    cum += FastExp(c.logit - max_logit);
    if (cum >= target) break;  // else (rounding) the whole bucket stays
  }
  cands.resize(kept);
  *sorted = false;
}

void MinP(float min_p, std::vector<Candidate>& cands) {
  if (min_p <= 0.0f || cands.size() <= 1) return;
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const Candidate& c : cands) max_logit = std::max(max_logit, c.logit);
  const float threshold = max_logit + std::log(min_p);
  // The max itself always passes (log(min_p) <= 0), so at least one is kept.
  std::erase_if(cands, [threshold](const Candidate& c) { return c.logit < threshold; });
}

}  // namespace pagoda
