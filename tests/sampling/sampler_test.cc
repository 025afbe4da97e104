#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace pagoda {
namespace {

Sampler MakeSampler(const SamplingParams& p, int32_t n_vocab) {
  Result<Sampler> s = Sampler::Create(p, n_vocab);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

std::vector<double> Softmax(const std::vector<float>& logits, double temperature) {
  double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::isinf(logits[i]) ? 0.0 : std::exp((logits[i] - max) / temperature);
    sum += p[i];
  }
  for (double& x : p) x /= sum;
  return p;
}

// Pearson chi-square of observed counts against expected probabilities; the
// categories with zero expectation must have no observations.
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
  double chi2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " should be impossible";
      continue;
    }
    const double e = probs[i] * n;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi2;
}

std::vector<int> Histogram(Sampler& s, const std::vector<float>& logits, int n) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) {
    std::vector<float> row = logits;
    ++counts[s.Sample(row, {})];
  }
  return counts;
}

const std::vector<float> kLogits16 = {0.3f, -1.2f, 1.1f, 0.0f, 0.7f, -0.4f, 1.4f, -0.9f,
                                      0.2f, 0.9f, -1.5f, 0.5f, -0.1f, 1.0f, -0.6f, 0.4f};

TEST(SamplerTest, GreedyPicksArgmaxWithTiesToLowestId) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s = MakeSampler(p, 5);
  std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f, 1.9f};
  EXPECT_EQ(s.Sample(logits, {}), 1);
  std::vector<float> row = kLogits16;
  Sampler s16 = MakeSampler(p, 16);
  EXPECT_EQ(s16.Sample(row, {}), 6);
}

TEST(SamplerTest, GreedyAppliesPenaltiesFirst) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  Sampler s = MakeSampler(p, 3);
  std::vector<float> logits = {1.0f, 1.5f, 0.2f};
  const std::vector<TokenId> history = {1};
  EXPECT_EQ(s.Sample(logits, history), 0);  // 1.5 / 2 < 1.0
}

TEST(SamplerTest, EmpiricalDistributionMatchesSoftmax) {
  constexpr int kDraws = 20000;
  for (float temperature : {1.0f, 0.7f, 1.8f}) {
    SamplingParams p;
    p.temperature = temperature;
    p.seed = 1234;
    Sampler s = MakeSampler(p, 16);
    const std::vector<int> counts = Histogram(s, kLogits16, kDraws);
    // 15 degrees of freedom: P(chi2 > 50) ~ 1e-5.
    EXPECT_LT(ChiSquare(counts, Softmax(kLogits16, temperature), kDraws), 50.0)
        << "temperature " << temperature;
  }
}

// Reference chain: top-k, top-p, min-p on the T=1 softmax, then softmax at T.
std::vector<double> ReferenceFiltered(const std::vector<float>& logits, int top_k, double top_p,
                                      double min_p, double temperature) {
  std::vector<int> order(logits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  if (top_k > 0 && size_t(top_k) < order.size()) order.resize(top_k);
  std::vector<float> kept;
  for (int id : order) kept.push_back(logits[id]);
  std::vector<double> pk = Softmax(kept, 1.0);
  double cum = 0.0;
  size_t n = 0;
  while (n < order.size()) {
    cum += pk[n++];
    if (cum >= top_p) break;
  }
  order.resize(n);
  const float max = logits[order[0]];
  std::erase_if(order, [&](int id) { return std::exp(double(logits[id]) - max) < min_p; });
  std::vector<float> masked(logits.size(), -INFINITY);
  for (int id : order) masked[id] = logits[id];
  return Softmax(masked, temperature);
}

TEST(SamplerTest, FilteredDistributionMatchesReferenceChain) {
  constexpr int kDraws = 20000;
  struct Case { int top_k; float top_p, min_p, temperature; };
  for (const Case& c : {Case{5, 1.0f, 0.0f, 1.0f}, Case{0, 0.8f, 0.0f, 1.0f},
                        Case{0, 1.0f, 0.3f, 0.8f}, Case{10, 0.9f, 0.2f, 1.5f}}) {
    SamplingParams p;
    p.top_k = c.top_k;
    p.top_p = c.top_p;
    p.min_p = c.min_p;
    p.temperature = c.temperature;
    p.seed = 99;
    Sampler s = MakeSampler(p, 16);
    const std::vector<int> counts = Histogram(s, kLogits16, kDraws);
    const std::vector<double> ref =
        ReferenceFiltered(kLogits16, c.top_k, c.top_p, c.min_p, c.temperature);
    EXPECT_LT(ChiSquare(counts, ref, kDraws), 50.0)
        << "top_k " << c.top_k << " top_p " << c.top_p << " min_p " << c.min_p;
  }
}

std::vector<TokenId> RunSequence(const SamplingParams& p, const std::vector<float>& logits, int n) {
  Sampler s = MakeSampler(p, int32_t(logits.size()));
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) {
    std::vector<float> row = logits;
    out.push_back(s.Sample(row, out));
  }
  return out;
}

TEST(SamplerTest, SameSeedGivesSameSequence) {
  SamplingParams p;
  p.seed = 42;
  p.top_k = 8;
  p.frequency_penalty = 0.3f;
  EXPECT_EQ(RunSequence(p, kLogits16, 200), RunSequence(p, kLogits16, 200));
  p.top_k = 0;
  EXPECT_EQ(RunSequence(p, kLogits16, 200), RunSequence(p, kLogits16, 200));
}

TEST(SamplerTest, DifferentSeedsGiveDifferentSequences) {
  SamplingParams a, b;
  a.seed = 1;
  b.seed = 2;
  EXPECT_NE(RunSequence(a, kLogits16, 100), RunSequence(b, kLogits16, 100));
}

TEST(SamplerTest, MinusInfinityBiasForbidsToken) {
  SamplingParams p;
  p.seed = 7;
  p.logit_bias[6] = -INFINITY;  // the most likely token
  p.logit_bias[2] = -INFINITY;
  for (int top_k : {0, 4}) {
    p.top_k = top_k;
    Sampler s = MakeSampler(p, 16);
    const std::vector<int> counts = Histogram(s, kLogits16, 5000);
    EXPECT_EQ(counts[6], 0);
    EXPECT_EQ(counts[2], 0);
  }
  p.temperature = 0.0f;
  Sampler g = MakeSampler(p, 16);
  std::vector<float> row = kLogits16;
  EXPECT_EQ(g.Sample(row, {}), 13);  // next best after 6 (1.4) and 2 (1.1)
}

TEST(SamplerTest, PositiveBiasShiftsDistribution) {
  SamplingParams p;
  p.seed = 8;
  p.logit_bias[10] = 3.0f;
  Sampler s = MakeSampler(p, 16);
  std::vector<float> biased = kLogits16;
  biased[10] += 3.0f;
  EXPECT_LT(ChiSquare(Histogram(s, kLogits16, 20000), Softmax(biased, 1.0), 20000), 50.0);
}

TEST(SamplerTest, AllTokensForbiddenFallsBackToArgmax) {
  SamplingParams p;
  for (int t = 0; t < 16; ++t) p.logit_bias[t] = -INFINITY;
  for (int top_k : {0, 3}) {
    p.top_k = top_k;
    Sampler s = MakeSampler(p, 16);
    std::vector<float> row = kLogits16;
    EXPECT_EQ(s.Sample(row, {}), 0);
  }
}

TEST(SamplerTest, LargeVocabularyStaysInsideNucleus) {
  constexpr int kVocab = 150000;
  std::mt19937 gen(3);
  std::normal_distribution<float> d(0.0f, 2.5f);
  std::vector<float> logits(kVocab);
  for (float& x : logits) x = d(gen);
  SamplingParams p;
  p.top_p = 0.5f;
  p.seed = 5;
  Sampler s = MakeSampler(p, kVocab);
  std::vector<Candidate> all;
  for (int i = 0; i < kVocab; ++i) all.push_back({i, logits[i]});
  bool sorted = false;
  SamplingScratch scratch;
  TopP(0.5f, all, &sorted, scratch);
  const float cutoff = all.back().logit;
  for (int i = 0; i < 50; ++i) {
    std::vector<float> row = logits;
    const TokenId t = s.Sample(row, {});
    EXPECT_GE(logits[t], cutoff);
  }
  p.top_p = 1.0f;
  p.top_k = 40;
  Sampler k = MakeSampler(p, kVocab);
  std::vector<float> sorted_logits = logits;
  std::nth_element(sorted_logits.begin(), sorted_logits.begin() + 39, sorted_logits.end(),
                   std::greater<float>());
  for (int i = 0; i < 50; ++i) {
    std::vector<float> row = logits;
    EXPECT_GE(logits[k.Sample(row, {})], sorted_logits[39]);
  }
}

TEST(SamplerTest, CreateRejectsInvalidParams) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_EQ(Sampler::Create(p, 16).status().code(), StatusCode::kInvalidArgument);
  p = {};
  p.logit_bias[16] = 1.0f;
  EXPECT_EQ(Sampler::Create(p, 16).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(Sampler::Create(SamplingParams{}, 0).ok());
}

}  // namespace
}  // namespace pagoda
