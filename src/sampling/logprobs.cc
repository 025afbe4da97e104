#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"
#include "sampling/fast_exp.h"

namespace pagoda {

double LogSumExp(std::span<const float> logits) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (float v : logits) max_logit = std::max(max_logit, v);  // drops NaN
  if (!(max_logit > -std::numeric_limits<float>::infinity())) {
    return -std::numeric_limits<double>::infinity();
  }
  // NaN and -inf terms are 0; the max contributes 1.
  return max_logit + std::log(ExpTerms(logits, max_logit, 1.0f, nullptr));
}

float TokenLogprobOf(std::span<const float> logits, TokenId id) {
  PAGODA_CHECK(id >= 0 && size_t(id) < logits.size()) << "token " << id << " out of range";
  return float(double(logits[id]) - LogSumExp(logits));
}

std::vector<TokenLogprob> TopLogprobs(std::span<const float> logits, int n) {
  std::vector<TokenLogprob> out;
  if (n <= 0 || logits.empty()) return out;
  const double lse = LogSumExp(logits);
  const size_t k = std::min(size_t(n), logits.size());
  auto before = [](const TokenLogprob& a, const TokenLogprob& b) {
    return a.logprob > b.logprob || (a.logprob == b.logprob && a.id < b.id);
  };
  if (k > 64) {  // large n: partial sort of the whole row
    for (size_t i = 0; i < logits.size(); ++i) {
      if (!std::isnan(logits[i])) out.push_back({TokenId(i), logits[i]});
    }
    const size_t m = std::min(k, out.size());
    std::partial_sort(out.begin(), out.begin() + m, out.end(), before);
    out.resize(m);
    for (TokenLogprob& t : out) t.logprob = float(double(t.logprob) - lse);
    return out;
  }
  // Small n (OpenAI allows up to 20): a sorted window of the best k seen so
  // far; most tokens fail the first comparison, so this is about one pass.
  out.reserve(k + 1);
  float floor = -std::numeric_limits<float>::infinity();  // worst kept, once k are kept
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!(logits[i] >= floor)) continue;  // the common case; NaN too
    const TokenLogprob t{TokenId(i), logits[i]};  // raw logit until the end
    if (out.size() == k && !before(t, out.back())) continue;
    out.insert(std::upper_bound(out.begin(), out.end(), t, before), t);
    if (out.size() > k) out.pop_back();
    if (out.size() == k) floor = out.back().logprob;
  }
  for (TokenLogprob& t : out) t.logprob = float(double(t.logprob) - lse);
  return out;
}

}  // namespace pagoda
