#include "kernels/cpu/quantize_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "gguf/gguf_file.h"
#include "kernels/cpu/quantize.h"
#include "tensor/blocks.h"
#include "tensor/fp16.h"

namespace pagoda::kernels {
namespace {

std::vector<float> GaussianRow(int64_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

std::vector<uint8_t> Quantize(DType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(RowBytes(type, static_cast<int64_t>(x.size())));
  EXPECT_TRUE(QuantizeWeightRow(type, x.data(), q.data(), static_cast<int64_t>(x.size())).ok());
  return q;
}

std::vector<float> Dequantize(DType type, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(n);
  EXPECT_TRUE(DequantizeRow(type, q.data(), y.data(), n).ok());
  return y;
}

double SquaredError(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e += double(a[i] - b[i]) * (a[i] - b[i]);
  return e;
}

// ---- ggml's rounding rules, derived by hand from the reference definitions ----

TEST(QuantizeWeightsTest, Q4_0ScalesBySignedMaxSoTheMaxMapsToLevelZero) {
  std::vector<float> x(32, 0.0f);
  x[5] = 4.0f;   // the largest magnitude is positive: d = 4 / -8 = -0.5
  x[6] = -1.0f;  // -1 * (1 / -0.5) + 8.5 = 10.5 -> 10
  x[20] = 0.74f; // 0.74 * -2 + 8.5 = 7.02 -> 7
  auto q = Quantize(DType::kQ4_0, x);
  BlockQ4_0 b;
  std::memcpy(&b, q.data(), sizeof b);
  EXPECT_EQ(F16ToF32(b.d), -0.5f);
  EXPECT_EQ(b.qs[5] & 0xF, 0);
  EXPECT_EQ(b.qs[6] & 0xF, 10);
  EXPECT_EQ(b.qs[4] >> 4, 7);  // element 20 is the high nibble of byte 4
  EXPECT_EQ(b.qs[0] & 0xF, 8);  // zero -> 8.5 -> 8
}

TEST(QuantizeWeightsTest, Q8_0RoundsHalfAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  auto q = Quantize(DType::kQ8_0, x);
  BlockQ8_0 b;
  std::memcpy(&b, q.data(), sizeof b);
  EXPECT_EQ(F16ToF32(b.d), 1.0f);
  EXPECT_EQ(b.qs[0], 127);
  EXPECT_EQ(b.qs[1], 3);  // roundf, not round-half-even (which gives 2)
  EXPECT_EQ(b.qs[2], -3);
  EXPECT_EQ(b.qs[3], 4);
}

TEST(QuantizeWeightsTest, Q4_1UsesMinAndRange) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = -1.0f + 0.5f * (j % 16);  // min -1, max 6.5: d = 0.5
  auto q = Quantize(DType::kQ4_1, x);
  BlockQ4_1 b;
  std::memcpy(&b, q.data(), sizeof b);
  EXPECT_EQ(F16ToF32(b.d), 0.5f);
  EXPECT_EQ(F16ToF32(b.m), -1.0f);
  auto y = Dequantize(DType::kQ4_1, q, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]) << j;  // exactly representable
}

TEST(QuantizeWeightsTest, Q4_KRepresentsSubBlockGridsExactly) {
  // Each 32-sub-block is a 16-level grid with scale s_j and offset -m_j where
  // s_j, m_j are multiples of the super-block steps: the search must find an
  // exact fit (zero error), which a plain min-max rule also does; shifting a
  // sub-block keeps it exact only if the min is fitted, not just clamped.
  std::vector<float> x(256);
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 32; ++l) x[32 * j + l] = 0.25f * (l % 16) - 0.125f * j;
  }
  auto y = Dequantize(DType::kQ4_K, Quantize(DType::kQ4_K, x), 256);
  double worst = 0;
  for (int i = 0; i < 256; ++i) worst = std::max(worst, double(std::fabs(y[i] - x[i])));
  EXPECT_LT(worst, 0.01);
}

TEST(QuantizeWeightsTest, ZeroRowsGiveZeroBlocks) {
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ4_K, DType::kQ5_K,
                  DType::kQ6_K}) {
    std::vector<float> x(256, 0.0f);
    auto y = Dequantize(t, Quantize(t, x), 256);
    for (float v : y) ASSERT_EQ(v, 0.0f) << DTypeName(t);
  }
}

// ---- round trip through the dequantizer ----

struct BoundCase {
  DType type;
  double max_rel_rmse;  // sqrt(sum err^2 / sum x^2) on N(0,1) rows
};

class QuantizeWeightsRoundTrip : public ::testing::TestWithParam<BoundCase> {};

TEST_P(QuantizeWeightsRoundTrip, ErrorWithinBound) {
  const BoundCase c = GetParam();
  const int64_t n = 4096;
  double err = 0, norm = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    auto x = GaussianRow(n, seed, 0.02f);
    auto y = Dequantize(c.type, Quantize(c.type, x), n);
    err += SquaredError(x, y);
    for (float v : x) norm += double(v) * v;
  }
  EXPECT_LT(std::sqrt(err / norm), c.max_rel_rmse) << DTypeName(c.type);
}

// Per-element bound for the legacy types: at most one step (Q4_0/Q5_0: the
// positive side clamps at level 15/31), half a step for Q8_0 and Q4_1.
TEST_P(QuantizeWeightsRoundTrip, LegacyBlocksErrorAtMostOneStep) {
  const BoundCase c = GetParam();
  if (GetDTypeInfo(c.type).block_size != 32) GTEST_SKIP() << "K-quant";
  const int64_t n = 1024;
  auto x = GaussianRow(n, 99);
  auto q = Quantize(c.type, x);
  auto y = Dequantize(c.type, q, n);
  const int64_t tsize = GetDTypeInfo(c.type).type_size;
  for (int64_t b = 0; b < n / 32; ++b) {
    Half dh;
    std::memcpy(&dh, q.data() + b * tsize, sizeof dh);
    const double d = std::fabs(F16ToF32(dh));
    const double step = c.type == DType::kQ8_0 || c.type == DType::kQ4_1 ? 0.5 : 1.0;
    for (int j = 0; j < 32; ++j) {
      const int64_t i = b * 32 + j;
      // fp16 rounding of d (and m) adds up to 2^-11 relative per level (127 for Q8_0).
      EXPECT_LE(std::fabs(x[i] - y[i]), step * d + 130 * d / 2048 + 1e-6) << DTypeName(c.type) << " " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeWeightsRoundTrip,
                         ::testing::Values(BoundCase{DType::kQ8_0, 0.006}, BoundCase{DType::kQ4_0, 0.12},
                                           BoundCase{DType::kQ4_1, 0.10}, BoundCase{DType::kQ5_0, 0.06},
                                           BoundCase{DType::kQ4_K, 0.095}, BoundCase{DType::kQ5_K, 0.045},
                                           BoundCase{DType::kQ6_K, 0.025}),
                         [](const auto& info) { return std::string(DTypeName(info.param.type)); });

// ggml's Q4_0 / Q5_0 put the largest magnitude at level 0, so the dequantized
// values of a ggml-made block requantize to the very same bytes: a block
// written by llama-quantize survives a dequantize + quantize round unchanged.
TEST(QuantizeWeightsTest, Q4_0AndQ5_0AreIdempotent) {
  for (DType t : {DType::kQ4_0, DType::kQ5_0}) {
    auto x = GaussianRow(8192, 7);
    auto q1 = Quantize(t, x);
    auto q2 = Quantize(t, Dequantize(t, q1, 8192));
    EXPECT_EQ(q1, q2) << DTypeName(t);
  }
}

// ---- rows over a pool ----

TEST(QuantizeWeightsTest, RowsOverPoolMatchRowByRowForAnyThreadCount) {
  const int64_t n_rows = 37, n = 512;
  auto x = GaussianRow(n_rows * n, 3);
  for (DType t : {DType::kQ4_0, DType::kQ4_K, DType::kQ8_0}) {
    const int64_t rb = RowBytes(t, n);
    std::vector<uint8_t> want(n_rows * rb);
    for (int64_t r = 0; r < n_rows; ++r) {
      ASSERT_TRUE(QuantizeWeightRow(t, x.data() + r * n, want.data() + r * rb, n).ok());
    }
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      std::vector<uint8_t> got(n_rows * rb, 0xAB);
      ASSERT_TRUE(QuantizeWeightRows(t, x.data(), got.data(), n_rows, n, pool).ok());
      EXPECT_EQ(got, want) << DTypeName(t) << " threads " << threads;
    }
  }
}

TEST(QuantizeWeightsTest, RequantizeTensorEqualsDequantizeThenQuantize) {
  const int64_t n_rows = 21, n = 256;
  auto x = GaussianRow(n_rows * n, 4);
  std::vector<uint8_t> q8(n_rows * RowBytes(DType::kQ8_0, n));
  ThreadPool pool(2);
  ASSERT_TRUE(QuantizeWeightRows(DType::kQ8_0, x.data(), q8.data(), n_rows, n, pool).ok());
  TensorView src;
  src.type = DType::kQ8_0;
  src.n_dims = 2;
  src.ne = {n, n_rows, 1, 1};
  src.data = q8.data();
  src.nbytes = static_cast<int64_t>(q8.size());
  for (DType t : {DType::kQ4_0, DType::kQ4_K}) {
    const int64_t rb = RowBytes(t, n);
    std::vector<uint8_t> got(n_rows * rb);
    ASSERT_TRUE(RequantizeTensor(src, t, got.data(), pool).ok());
    std::vector<float> row(n);
    for (int64_t r = 0; r < n_rows; ++r) {
      ASSERT_TRUE(DequantizeRow(DType::kQ8_0, src.row(r), row.data(), n).ok());
      std::vector<uint8_t> want(rb);
      ASSERT_TRUE(QuantizeWeightRow(t, row.data(), want.data(), n).ok());
      EXPECT_EQ(0, std::memcmp(want.data(), got.data() + r * rb, rb)) << DTypeName(t) << " row " << r;
    }
  }
}

TEST(QuantizeWeightsTest, RejectsUnsupportedTypesAndRaggedRows) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> buf(4096);
  EXPECT_FALSE(QuantizeWeightRow(DType::kQ5_1, x.data(), buf.data(), 32).ok());
  EXPECT_FALSE(QuantizeWeightRow(DType::kQ8_K, x.data(), buf.data(), 256).ok());
  EXPECT_FALSE(QuantizeWeightRow(DType::kQ4_0, x.data(), buf.data(), 48).ok());
  EXPECT_FALSE(QuantizeWeightRow(DType::kQ4_K, x.data(), buf.data(), 128).ok());
  ThreadPool pool(1);
  EXPECT_FALSE(QuantizeWeightRows(DType::kQ4_K, x.data(), buf.data(), 1, 128, pool).ok());
  EXPECT_FALSE(CanQuantizeWeights(DType::kQ2_K));
}

// Golden: /work/models/llama1b-q4_0.gguf holds Q4_0 blocks made with ggml's
// Q4_0 rule; requantizing their dequantized rows must give the same bytes.
TEST(QuantizeWeightsTest, RequantizesAQ4_0CheckpointToTheSameBytes) {
  const char* path = "/work/models/llama1b-q4_0.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " absent";
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  int checked = 0;
  for (const GgufTensorInfo& info : (*file)->tensors()) {
    if (info.type != DType::kQ4_0 || checked >= 4) continue;
    TensorView t = (*file)->View(info);
    const int64_t n = t.ne[0];
    std::vector<float> row(n);
    std::vector<uint8_t> q(t.row_bytes());
    for (int64_t r = 0; r < std::min<int64_t>(t.rows(), 8); ++r) {
      ASSERT_TRUE(DequantizeRow(t.type, t.row(r), row.data(), n).ok());
      ASSERT_TRUE(QuantizeWeightRow(DType::kQ4_0, row.data(), q.data(), n).ok());
      ASSERT_EQ(0, std::memcmp(q.data(), t.row(r), q.size())) << info.name << " row " << r;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace pagoda::kernels
