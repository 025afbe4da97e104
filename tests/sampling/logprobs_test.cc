#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace pagoda {
namespace {

// Reference: double log-softmax of everything, full sort.
std::vector<TokenLogprob> Reference(const std::vector<float>& logits, size_t n) {
  double max = *std::max_element(logits.begin(), logits.end()), sum = 0.0;
  for (float v : logits) sum += std::exp(v - max);
  std::vector<TokenLogprob> all;
  for (size_t i = 0; i < logits.size(); ++i) {
    all.push_back({TokenId(i), float(logits[i] - max - std::log(sum))});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const TokenLogprob& a, const TokenLogprob& b) { return a.logprob > b.logprob; });
  all.resize(std::min(n, all.size()));
  return all;
}

std::vector<float> RandomLogits(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 4.0f);
  std::vector<float> v(n);
  for (float& x : v) x = std::round(d(gen) * 4.0f) / 4.0f;  // some ties
  return v;
}

TEST(LogprobsTest, TopLogprobsMatchFullLogSoftmax) {
  const std::vector<float> logits = RandomLogits(32000, 17);
  for (int n : {1, 5, 20, 100}) {
    const std::vector<TokenLogprob> got = TopLogprobs(logits, n);
    const std::vector<TokenLogprob> ref = Reference(logits, n);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].id, ref[i].id) << "n=" << n << " i=" << i;
      EXPECT_NEAR(got[i].logprob, ref[i].logprob, 1e-5);
    }
  }
}

TEST(LogprobsTest, ProbabilitiesSumToOne) {
  const std::vector<float> logits = RandomLogits(1000, 3);
  double total = 0.0;
  for (const TokenLogprob& t : TopLogprobs(logits, 1000)) total += std::exp(double(t.logprob));
  EXPECT_NEAR(total, 1.0, 1e-5);
}

TEST(LogprobsTest, ShortRowAndEdgeCases) {
  const std::vector<float> logits = {0.0f, std::log(3.0f), -INFINITY};
  const std::vector<TokenLogprob> got = TopLogprobs(logits, 10);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].id, 1);
  EXPECT_NEAR(got[0].logprob, std::log(0.75), 1e-6);
  EXPECT_NEAR(got[1].logprob, std::log(0.25), 1e-6);
  EXPECT_EQ(got[2].logprob, -INFINITY);
  EXPECT_TRUE(TopLogprobs(logits, 0).empty());
  EXPECT_NEAR(TokenLogprobOf(logits, 0), std::log(0.25), 1e-6);
  EXPECT_NEAR(LogSumExp(logits), std::log(4.0), 1e-6);  // log(3) rounded to float
}

TEST(LogprobsTest, TiesGoToLowerId) {
  const std::vector<float> logits = {1.0f, 2.0f, 2.0f, 2.0f};
  const std::vector<TokenLogprob> got = TopLogprobs(logits, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].id, 1);
  EXPECT_EQ(got[1].id, 2);
}

}  // namespace
}  // namespace pagoda
