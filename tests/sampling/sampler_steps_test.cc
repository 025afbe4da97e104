#include "sampling/sampler_steps.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace pagoda {
namespace {

std::vector<Candidate> AllCandidates(const std::vector<float>& logits) {
  std::vector<Candidate> c;
  for (size_t i = 0; i < logits.size(); ++i) c.push_back({TokenId(i), logits[i]});
  return c;
}

// Logits with deliberate ties (values on a coarse grid).
std::vector<float> RandomLogits(size_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = std::round(d(gen) * 8.0f) / 8.0f;
  return v;
}

std::vector<TokenId> Ids(const std::vector<Candidate>& c) {
  std::vector<TokenId> ids;
  for (const Candidate& x : c) ids.push_back(x.id);
  return ids;
}

std::vector<TokenId> SortedIds(std::vector<Candidate> c) {
  std::vector<TokenId> ids = Ids(c);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Reference: sort everything, take the smallest prefix with mass >= p.
std::vector<TokenId> ReferenceTopP(const std::vector<Candidate>& in, double p) {
  std::vector<Candidate> c = in;
  std::sort(c.begin(), c.end(), CandidateBefore);
  double max = c[0].logit, sum = 0.0;
  for (const Candidate& x : c) sum += std::exp(double(x.logit) - max);
  double cum = 0.0;
  std::vector<TokenId> kept;
  for (const Candidate& x : c) {
    kept.push_back(x.id);
    cum += std::exp(double(x.logit) - max);
    if (cum >= p * sum) break;  // unnormalised: exact on a constant row
  }
  return kept;
}

TEST(ArgmaxTest, PicksLargestWithTiesToLowestIdAndIgnoresNan) {
  EXPECT_EQ(Argmax(std::vector<float>{1, 5, 3, 5}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{NAN, -1, NAN, 2, 2}), 3);
  EXPECT_EQ(Argmax(std::vector<float>{-INFINITY, -INFINITY}), 0);
  EXPECT_EQ(Argmax(std::vector<float>{NAN, NAN}), 0);
}

TEST(ApplyLogitBiasTest, AddsBiasToNamedTokensOnly) {
  std::vector<float> logits = {1, 2, 3, 4};
  ApplyLogitBias({{1, 0.5f}, {3, -INFINITY}, {7, 1.0f}}, logits);
  EXPECT_EQ(logits, (std::vector<float>{1, 2.5f, 3, -INFINITY}));
}

TEST(ApplyPenaltiesTest, RepetitionDividesPositiveAndMultipliesNegativeOncePerToken) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  p.penalty_last_n = 3;
  std::vector<float> logits = {4, -4, 4, -4, 4, 0};
  SamplingScratch scratch;
  // Window = last 3 = {1, 1, 5}; token 0 is outside it.
  const std::vector<TokenId> history = {0, 2, 1, 1, 5};
  ApplyPenalties(p, history, 0, logits, scratch);
  EXPECT_EQ(logits, (std::vector<float>{4, -8, 4, -4, 4, 0}));
  EXPECT_TRUE(std::all_of(scratch.counts.begin(), scratch.counts.end(), [](int32_t c) { return c == 0; }));

  p.penalty_last_n = -1;  // whole history, prompt included
  logits = {4, -4, 4, -4, 4, 0};
  ApplyPenalties(p, history, /*n_prompt=*/5, logits, scratch);
  EXPECT_EQ(logits, (std::vector<float>{2, -8, 2, -4, 4, 0}));

  p.penalty_last_n = 0;  // disabled
  logits = {4, -4, 4, -4, 4, 0};
  ApplyPenalties(p, history, 0, logits, scratch);
  EXPECT_EQ(logits, (std::vector<float>{4, -4, 4, -4, 4, 0}));
}

TEST(ApplyPenaltiesTest, PresenceAndFrequencyCountGeneratedTokensOnly) {
  SamplingParams p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  std::vector<float> logits = {1, 1, 1, 1};
  SamplingScratch scratch;
  // Prompt {0, 0, 1}; generated {1, 2, 2, 2}.
  const std::vector<TokenId> history = {0, 0, 1, 1, 2, 2, 2};
  ApplyPenalties(p, history, 3, logits, scratch);
  EXPECT_FLOAT_EQ(logits[0], 1.0f);
  EXPECT_FLOAT_EQ(logits[1], 1.0f - 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(logits[2], 1.0f - 3 * 0.25f - 0.5f);
  EXPECT_FLOAT_EQ(logits[3], 1.0f);
  EXPECT_TRUE(std::all_of(scratch.counts.begin(), scratch.counts.end(), [](int32_t c) { return c == 0; }));
}

TEST(ApplyPenaltiesTest, IgnoresOutOfRangeHistoryIds) {
  SamplingParams p;
  p.repetition_penalty = 1.5f;
  p.frequency_penalty = 1.0f;
  std::vector<float> logits = {3, 3};
  SamplingScratch scratch;
  ApplyPenalties(p, std::vector<TokenId>{-1, 7, 1}, 0, logits, scratch);
  EXPECT_FLOAT_EQ(logits[0], 3.0f);
  EXPECT_FLOAT_EQ(logits[1], 3.0f / 1.5f - 1.0f);
}

TEST(TopKTest, MatchesFullSortReference) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::vector<float> logits = RandomLogits(2000, seed);
    for (int k : {1, 7, 40, 1999}) {
      std::vector<Candidate> c = AllCandidates(logits);
      bool sorted = false;
      TopK(k, c, &sorted);
      std::vector<Candidate> ref = AllCandidates(logits);
      std::sort(ref.begin(), ref.end(), CandidateBefore);
      ref.resize(k);
      EXPECT_TRUE(sorted);
      EXPECT_EQ(Ids(c), Ids(ref)) << "k=" << k;
    }
  }
}

TEST(TopKTest, DisabledKeepsEverythingUnsorted) {
  std::vector<Candidate> c = AllCandidates({1, 3, 2});
  bool sorted = false;
  TopK(0, c, &sorted);
  TopK(3, c, &sorted);
  EXPECT_FALSE(sorted);
  EXPECT_EQ(Ids(c), (std::vector<TokenId>{0, 1, 2}));
}

std::vector<TokenId> Sorted(std::vector<TokenId> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(TopPTest, KeepsSmallestPrefixReachingMass) {
  // Short rows take the sort path, long ones the bucketed path; peaked,
  // flat (many ties on the 1/8 grid) and constant rows.
  for (size_t n : {500u, 150000u}) {
    for (float scale : {4.0f, 0.3f, 0.0f}) {
      const std::vector<float> logits = RandomLogits(n, 11, scale);
      for (float p : {0.05f, 0.5f, 0.9f, 0.99f}) {
        SamplingScratch scratch;
        std::vector<Candidate> c = AllCandidates(logits);
        bool sorted = false;
        TopP(p, c, &sorted, scratch);
        const std::vector<TokenId> ref = ReferenceTopP(AllCandidates(logits), p);
        if (sorted) {
          EXPECT_EQ(Ids(c), ref) << "p=" << p << " scale=" << scale << " n=" << n;
        } else {
          EXPECT_EQ(SortedIds(c), Sorted(ref)) << "p=" << p << " scale=" << scale << " n=" << n;
        }
      }
    }
  }
}

TEST(TopPTest, WorksOnAlreadySortedList) {
  const std::vector<float> logits = RandomLogits(300, 5);
  std::vector<Candidate> c = AllCandidates(logits);
  bool sorted = false;
  TopK(100, c, &sorted);
  std::vector<Candidate> after_k = c;
  SamplingScratch scratch;
  TopP(0.7f, c, &sorted, scratch);
  EXPECT_EQ(Ids(c), ReferenceTopP(after_k, 0.7));
}

TEST(TopPTest, KeepsAtLeastOneToken) {
  std::vector<Candidate> c = AllCandidates({10, 0, 0});
  bool sorted = false;
  SamplingScratch scratch;
  TopP(1e-6f, c, &sorted, scratch);
  EXPECT_EQ(Ids(c), (std::vector<TokenId>{0}));
}

TEST(MinPTest, KeepsTokensAboveFractionOfMaxProbability) {
  const std::vector<float> logits = RandomLogits(3000, 21);
  for (float min_p : {0.01f, 0.1f, 0.5f, 1.0f}) {
    std::vector<Candidate> c = AllCandidates(logits);
    MinP(min_p, c);
    const float max = *std::max_element(logits.begin(), logits.end());
    std::vector<TokenId> ref;
    for (size_t i = 0; i < logits.size(); ++i) {
      // p_i / p_max = exp(l_i - l_max)
      if (std::exp(double(logits[i]) - max) >= min_p * (1 - 1e-6)) ref.push_back(TokenId(i));
    }
    EXPECT_EQ(SortedIds(c), ref) << "min_p=" << min_p;
  }
}

}  // namespace
}  // namespace pagoda
