// BidirectionalAttention (ops.h) against its float64 reference twin, and its
// independence from the rest of the batch and from the thread count.
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/ops.h"

namespace pagoda::kernels {
namespace {

struct Case {
  int n_head, n_head_kv, head_dim;
};

std::vector<float> Random(int64_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

class BidirectionalAttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(BidirectionalAttentionTest, MatchesReference) {
  const Case c = GetParam();
  AttentionShape sh{c.n_head, c.n_head_kv, c.head_dim, c.head_dim, 1.0f / std::sqrt(float(c.head_dim))};
  // Three sequences of 1, 13 and 40 rows, interleaved in the batch.
  const int n = 54;
  std::vector<int32_t> a, b, d;
  for (int r = 0; r < n; ++r) (r == 0 ? a : (r % 4 == 1 && b.size() < 13) ? b : d).push_back(r);
  ASSERT_EQ(b.size(), 13u);
  const DenseSeq seqs[] = {{a.data(), int32_t(a.size())}, {b.data(), int32_t(b.size())}, {d.data(), int32_t(d.size())}};
  const int64_t qw = int64_t(c.n_head) * c.head_dim, kw = int64_t(c.n_head_kv) * c.head_dim;
  const auto q = Random(n * qw, 1, 2.0f), k = Random(n * kw, 2, 2.0f), v = Random(n * kw, 3, 1.0f);
  std::vector<float> got(n * qw), want(n * qw);
  ThreadPool pool(3);
  BidirectionalAttention(sh, q.data(), qw, k.data(), kw, v.data(), kw, seqs, 3, got.data(), qw, pool);
  BidirectionalAttentionReference(sh, q.data(), qw, k.data(), kw, v.data(), kw, seqs, 3, want.data(), qw);
  // f32 dot products and softmax (ExpApprox) against double: outputs are
  // convex combinations of V (|v| ~ 1), so an absolute bound.
  for (int64_t i = 0; i < n * qw; ++i) ASSERT_NEAR(got[i], want[i], 2e-5) << i;
}

TEST_P(BidirectionalAttentionTest, SequenceOutputIndependentOfBatchAndThreads) {
  const Case c = GetParam();
  AttentionShape sh{c.n_head, c.n_head_kv, c.head_dim, c.head_dim, 0.125f};
  const int n = 30;
  const int64_t qw = int64_t(c.n_head) * c.head_dim, kw = int64_t(c.n_head_kv) * c.head_dim;
  const auto q = Random(n * qw, 4, 1.0f), k = Random(n * kw, 5, 1.0f), v = Random(n * kw, 6, 1.0f);
  std::vector<int32_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  // Rows 10..29 as one sequence, alone (1 thread) and beside rows 0..9 (4 threads).
  const DenseSeq alone[] = {{all.data() + 10, 20}};
  const DenseSeq both[] = {{all.data(), 10}, {all.data() + 10, 20}};
  std::vector<float> o1(n * qw, 0.0f), o2(n * qw, 0.0f);
  ThreadPool one(1), four(4);
  BidirectionalAttention(sh, q.data(), qw, k.data(), kw, v.data(), kw, alone, 1, o1.data(), qw, one);
  BidirectionalAttention(sh, q.data(), qw, k.data(), kw, v.data(), kw, both, 2, o2.data(), qw, four);
  EXPECT_EQ(std::memcmp(o1.data() + 10 * qw, o2.data() + 10 * qw, 20 * qw * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, BidirectionalAttentionTest,
                         ::testing::Values(Case{4, 4, 16}, Case{12, 12, 64}, Case{8, 2, 32}, Case{2, 1, 7}),
                         [](const auto& info) {
                           return "h" + std::to_string(info.param.n_head) + "kv" + std::to_string(info.param.n_head_kv) +
                                  "d" + std::to_string(info.param.head_dim);
                         });

}  // namespace
}  // namespace pagoda::kernels
