#include "kernels/cpu/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/blocks.h"
#include "tensor/fp16.h"

namespace pagoda::kernels {
namespace {

constexpr Half kHalfOne = 0x3C00;   // 1.0
constexpr Half kHalfHalf = 0x3800;  // 0.5
constexpr Half kHalfQuarter = 0x3400;  // 0.25

std::vector<float> Dequant(DType type, const void* blocks, int64_t n) {
  std::vector<float> out(n);
  EXPECT_TRUE(DequantizeRow(type, blocks, out.data(), n).ok());
  return out;
}

// ---- golden blocks: expected values written from the format definition ----

TEST(QuantizeTest, DequantizesHandBuiltQ4_0) {
  BlockQ4_0 b;
  b.d = kHalfHalf;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = Dequant(DType::kQ4_0, &b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * (7 - j));
  }
}

TEST(QuantizeTest, DequantizesHandBuiltQ4_1) {
  BlockQ4_1 b;
  b.d = kHalfOne;
  b.m = 0xC000;  // -2.0
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (3 << 4));
  auto y = Dequant(DType::kQ4_1, &b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j - 2.0f);
    EXPECT_EQ(y[j + 16], 1.0f);
  }
}

TEST(QuantizeTest, DequantizesHandBuiltQ5_0) {
  BlockQ5_0 b;
  b.d = kHalfOne;
  const uint32_t qh = 0xAAAA5555u;  // 5th bit of element j is bit j
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = Dequant(DType::kQ5_0, &b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], static_cast<float>(static_cast<int>(j | (((qh >> j) & 1) << 4)) - 16));
    EXPECT_EQ(y[j + 16], static_cast<float>(static_cast<int>((15 - j) | (((qh >> (j + 16)) & 1) << 4)) - 16));
  }
}

TEST(QuantizeTest, DequantizesHandBuiltQ8_0) {
  BlockQ8_0 b;
  b.d = kHalfQuarter;
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 7 - 100);
  auto y = Dequant(DType::kQ8_0, &b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.25f * (j * 7 - 100));
}

// Packs 6-bit scale/min pairs as the Q4_K/Q5_K format defines them.
void PackK4Scales(const int* sc, const int* m, uint8_t* q) {
  std::memset(q, 0, 12);
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

TEST(QuantizeTest, DequantizesHandBuiltQ4_K) {
  BlockQ4_K b;
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  const int sc[8] = {1, 2, 3, 63, 17, 33, 48, 5};
  const int m[8] = {0, 62, 4, 6, 31, 40, 2, 63};
  PackK4Scales(sc, m, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i * 37 + 11) & 0xFF);
  auto y = Dequant(DType::kQ4_K, &b, 256);
  for (int i = 0; i < 256; ++i) {
    const int c = i / 64, h = (i % 64) / 32, l = i % 32, j = 2 * c + h;
    const int q = h ? b.qs[32 * c + l] >> 4 : b.qs[32 * c + l] & 15;
    EXPECT_EQ(y[i], 1.0f * sc[j] * q - 0.5f * m[j]) << i;
  }
}

TEST(QuantizeTest, DequantizesHandBuiltQ5_K) {
  BlockQ5_K b;
  b.d = kHalfHalf;
  b.dmin = kHalfOne;
  const int sc[8] = {9, 2, 63, 1, 32, 16, 8, 4};
  const int m[8] = {63, 0, 1, 2, 33, 17, 9, 5};
  PackK4Scales(sc, m, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((i * 53 + 7) & 0xFF);
  for (int i = 0; i < 32; ++i) b.qh[i] = static_cast<uint8_t>((i * 97 + 3) & 0xFF);
  auto y = Dequant(DType::kQ5_K, &b, 256);
  for (int i = 0; i < 256; ++i) {
    const int c = i / 64, h = (i % 64) / 32, l = i % 32, j = 2 * c + h;
    const int lo = h ? b.qs[32 * c + l] >> 4 : b.qs[32 * c + l] & 15;
    const int q = lo | (((b.qh[l] >> (2 * c + h)) & 1) << 4);
    EXPECT_EQ(y[i], 0.5f * sc[j] * q - 1.0f * m[j]) << i;
  }
}

TEST(QuantizeTest, DequantizesHandBuiltQ6_K) {
  BlockQ6_K b;
  b.d = kHalfQuarter;
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j * 9 - 70);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>((i * 29 + 5) & 0xFF);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>((i * 71 + 13) & 0xFF);
  auto y = Dequant(DType::kQ6_K, &b, 256);
  for (int i = 0; i < 256; ++i) {
    // Element i: half n of 128, quarter k of 32, lane l; sub-block of 16 = i / 16.
    const int n = i / 128, k = (i % 128) / 32, l = i % 32;
    const uint8_t ql = b.ql[64 * n + 32 * (k & 1) + l];
    const int lo = k >= 2 ? ql >> 4 : ql & 15;
    const int hi = (b.qh[32 * n + l] >> (2 * k)) & 3;
    const int q = (lo | (hi << 4)) - 32;
    EXPECT_EQ(y[i], 0.25f * b.scales[i / 16] * q) << i;
  }
}

TEST(QuantizeTest, DequantizesHandBuiltQ8_KAndFloats) {
  BlockQ8_K b{};
  b.d = 0.125f;
  for (int i = 0; i < 256; ++i) b.qs[i] = static_cast<int8_t>(i - 128);
  auto y = Dequant(DType::kQ8_K, &b, 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.125f * (i - 128));

  const uint16_t h[2] = {0x3C00, 0xC000};  // 1, -2
  auto yf = Dequant(DType::kF16, h, 2);
  EXPECT_EQ(yf[0], 1.0f);
  EXPECT_EQ(yf[1], -2.0f);
  const uint16_t bf[2] = {0x3F80, 0xC040};  // 1, -3
  auto yb = Dequant(DType::kBF16, bf, 2);
  EXPECT_EQ(yb[0], 1.0f);
  EXPECT_EQ(yb[1], -3.0f);
}

TEST(QuantizeTest, RejectsPartialBlocks) {
  std::vector<float> x(48);
  std::vector<uint8_t> buf(1024);
  EXPECT_FALSE(QuantizeRow(DType::kQ4_0, x.data(), buf.data(), 48).ok());
  EXPECT_FALSE(DequantizeRow(DType::kQ4_K, buf.data(), x.data(), 48).ok());
  EXPECT_FALSE(QuantizeRow(DType::kQ5_1, x.data(), buf.data(), 32).ok());
}

// ---- round trip: quantize then dequantize random rows ----

struct RoundTripCase {
  DType type;
  // Bound on RMS(error) / RMS(x) for N(0,1) data. From the step size: a
  // uniform rounding error of step/2 has RMS step/sqrt(12); with the block max
  // of 32 normals ~2.2 sigma (256: ~2.8) the steps are about
  // Q4_0/Q4_1 2*amax/15, Q5_0 amax/16, Q8_0 amax/127, K-quants similar plus the
  // 6/8-bit sub-block scale rounding. Bounds leave ~1.5x headroom.
  double rms_bound;
};

class QuantizeRoundTripTest : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(QuantizeRoundTripTest, ErrorWithinBound) {
  const RoundTripCase c = GetParam();
  const int64_t n = 4096;
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = dist(rng);
  x[5] = 0.0f;
  std::vector<uint8_t> q(RowBytes(c.type, n));
  ASSERT_TRUE(QuantizeRow(c.type, x.data(), q.data(), n).ok());
  auto y = Dequant(c.type, q.data(), n);
  double se = 0.0, sx = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    se += (y[i] - x[i]) * (y[i] - x[i]);
    sx += x[i] * x[i];
  }
  EXPECT_LE(std::sqrt(se / sx), c.rms_bound) << DTypeName(c.type);

  // An all-zero row must stay exactly zero (no NaN from 0/0 scales).
  std::vector<float> z(n, 0.0f);
  ASSERT_TRUE(QuantizeRow(c.type, z.data(), q.data(), n).ok());
  auto yz = Dequant(c.type, q.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(yz[i], 0.0f) << DTypeName(c.type) << " at " << i;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantizeRoundTripTest,
                         ::testing::Values(RoundTripCase{DType::kF32, 0.0}, RoundTripCase{DType::kF16, 4e-4},
                                           RoundTripCase{DType::kBF16, 3e-3}, RoundTripCase{DType::kQ8_0, 0.012},
                                           RoundTripCase{DType::kQ4_0, 0.17}, RoundTripCase{DType::kQ4_1, 0.14},
                                           RoundTripCase{DType::kQ5_0, 0.085}, RoundTripCase{DType::kQ4_K, 0.16},
                                           RoundTripCase{DType::kQ5_K, 0.08}, RoundTripCase{DType::kQ6_K, 0.045},
                                           RoundTripCase{DType::kQ8_K, 0.012}),
                         [](const auto& info) { return std::string(DTypeName(info.param.type)); });

}  // namespace
}  // namespace pagoda::kernels
