// The scaled KV codecs of kernels/cpu/kv_quant.h: FP8 E4M3 against a value
// table built from the format's definition (all 256 codes, round to nearest
// even by brute-force search), int8 rounding, power-of-two scales, the
// rescaling row store, and every ISA's dequantizer (LoadKvRow) over all codes
// and quantizing store (StoreKvRowQuantized) against the scalar one.
#include "kernels/cpu/kv_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops_attention_tile.h"
#include "tensor/fp16.h"

namespace pagoda::kernels {
namespace {

// Value of a code from the definition: (-1)^s * 2^(e-7) * (1 + m/8), or
// (-1)^s * 2^-6 * (m/8) for e == 0; e == 15, m == 7 is NaN.
double DefinedValue(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? std::pow(2.0, -6) * (m / 8.0) : std::pow(2.0, e - 7) * (1.0 + m / 8.0);
  return s ? -mag : mag;
}

// Nearest finite code by search over the positive codes, ties to the even
// mantissa (even code); beyond 448 saturates.
uint8_t NearestCode(float x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xff : 0x7f;
  const double a = std::fabs(static_cast<double>(x));
  int best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (int c = 0; c <= 0x7e; ++c) {
    const double err = std::fabs(DefinedValue(c) - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return static_cast<uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

TEST(Fp8E4M3Test, DecodesAllCodesAsDefined) {
  for (int c = 0; c < 256; ++c) {
    const double want = DefinedValue(c);
    const float got = Fp8E4M3ToFloat(static_cast<uint8_t>(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << "code " << c;
    }
  }
  EXPECT_EQ(Fp8E4M3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(Fp8E4M3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(Fp8E4M3ToFloat(0x08), std::ldexp(1.0f, -6));
}

TEST(Fp8E4M3Test, EncodeRoundTripsEveryCode) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;  // NaN
    EXPECT_EQ(FloatToFp8E4M3(Fp8E4M3ToFloat(static_cast<uint8_t>(c))), c) << c;
  }
  EXPECT_EQ(FloatToFp8E4M3(NAN) & 0x7f, 0x7f);
  EXPECT_EQ(FloatToFp8E4M3(-0.0f), 0x80);
}

TEST(Fp8E4M3Test, EncodeRoundsToNearestEvenAndSaturates) {
  std::vector<float> xs;
  // Every midpoint between neighbouring codes, and one f32 step either side.
  for (int c = 0; c < 0x7e; ++c) {
    const float mid = static_cast<float>((DefinedValue(c) + DefinedValue(c + 1)) / 2);
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  }
  const float edge[] = {448.0f, 449.0f, 463.99f, 464.0f, 480.0f, 1e6f, INFINITY, -INFINITY, 1e-30f, 9.7e-4f,
                        9.8e-4f, 1.0e-3f, 0.0f, std::numeric_limits<float>::denorm_min()};
  xs.insert(xs.end(), std::begin(edge), std::end(edge));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> exp_dist(-14.0f, 10.0f);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::exp2(exp_dist(rng)) * (i % 2 ? -1.0f : 1.0f);
    xs.push_back(x);
  }
  for (float x : xs) ASSERT_EQ(FloatToFp8E4M3(x), NearestCode(x)) << "x " << x;
}

TEST(Int8CodecTest, RoundsToNearestEvenAndClamps) {
  EXPECT_EQ(FloatToInt8(0.5f), 0);
  EXPECT_EQ(FloatToInt8(1.5f), 2);
  EXPECT_EQ(FloatToInt8(-2.5f), -2);
  EXPECT_EQ(FloatToInt8(126.6f), 127);
  EXPECT_EQ(FloatToInt8(300.0f), 127);
  EXPECT_EQ(FloatToInt8(-INFINITY), -127);
  EXPECT_EQ(FloatToInt8(NAN), 0);
}

TEST(KvScaleTest, SmallestPowerOfTwoThatFits) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> exp_dist(-30.0f, 30.0f);
  for (KvType t : {KvType::kFp8E4M3, KvType::kInt8}) {
    const float max = KvCodeMax(t);
    EXPECT_EQ(KvScaleValue(KvScaleByte(t, 0.0f)), 0.0f);
    EXPECT_EQ(KvScaleValue(KvScaleByte(t, max)), 1.0f);
    EXPECT_EQ(KvScaleValue(KvScaleByte(t, std::nextafter(max, 1e9f))), 2.0f);
    for (int i = 0; i < 10000; ++i) {
      const float amax = std::exp2(exp_dist(rng));
      const float s = KvScaleValue(KvScaleByte(t, amax));
      int e = 0;
      ASSERT_EQ(std::frexp(s, &e), 0.5f) << "not a power of two: " << s;
      ASSERT_LE(amax, max * s) << amax;
      ASSERT_GT(amax, max * s / 2) << amax;
    }
  }
}

// Each head row gets its own scale (the smallest power of two it fits under,
// as an E8M0 byte) and codes that are the row divided by it, rounded once:
// checked against a direct encode of x / scale for random rows of widely
// different magnitudes, including the scale byte's bounds.
TEST(StoreKvRowQuantizedTest, EachHeadRowHasItsOwnScale) {
  const int n_heads = 3, head_dim = 20;
  const int64_t scale_stride = 5;  // scales of a row's heads may be strided (head-major blocks)
  for (KvType type : {KvType::kFp8E4M3, KvType::kInt8}) {
    SCOPED_TRACE(KvTypeName(type));
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::uniform_real_distribution<float> mag(-40.0f, 40.0f);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> row(n_heads * head_dim);
      for (int h = 0; h < n_heads; ++h) {
        const float m = std::exp2(mag(rng));
        for (int d = 0; d < head_dim; ++d) row[h * head_dim + d] = dist(rng) * m;
      }
      std::vector<uint8_t> codes(n_heads * head_dim + 8, 0xAA);
      std::vector<uint8_t> scales(n_heads * scale_stride, 0xCC);
      StoreKvRowQuantized(row.data(), n_heads, head_dim, type, codes.data(), scales.data(), scale_stride);
      for (int h = 0; h < n_heads; ++h) {
        float amax = 0.0f;
        for (int d = 0; d < head_dim; ++d) amax = std::max(amax, std::fabs(row[h * head_dim + d]));
        const uint8_t e = scales[h * scale_stride];
        ASSERT_EQ(e, KvScaleByte(type, amax)) << "head " << h;
        const float scale = KvScaleValue(e);
        ASSERT_EQ(scale, std::ldexp(1.0f, e - 127));
        // The smallest power of two the row fits under (independently of KvScaleByte).
        ASSERT_LE(amax, KvCodeMax(type) * scale);
        ASSERT_GT(amax, KvCodeMax(type) * scale / 2);
        for (int d = 0; d < head_dim; ++d) {
          const float x = row[h * head_dim + d];
          const uint8_t c = codes[h * head_dim + d];
          if (type == KvType::kFp8E4M3) {
            ASSERT_EQ(c, FloatToFp8E4M3(x / scale)) << "head " << h;
          } else {
            ASSERT_EQ(static_cast<int8_t>(c), FloatToInt8(x / scale)) << "head " << h;
            ASSERT_LE(std::fabs(static_cast<int8_t>(c) * scale - x), 0.5f * scale);
          }
        }
        for (int64_t i = 1; i < scale_stride; ++i) ASSERT_EQ(scales[h * scale_stride + i], 0xCC);
      }
      for (int i = n_heads * head_dim; i < n_heads * head_dim + 8; ++i) ASSERT_EQ(codes[i], 0xAA);
    }
  }
}

// What a row stores is a function of the row alone: the same row written
// next to rows of any magnitude, in any order, gets the same bytes.
TEST(StoreKvRowQuantizedTest, StoredBytesDependOnTheRowAlone) {
  const int head_dim = 16;
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (KvType type : {KvType::kFp8E4M3, KvType::kInt8}) {
    std::vector<float> x(head_dim);
    for (float& v : x) v = dist(rng);
    std::vector<uint8_t> want(head_dim);
    uint8_t want_scale = 0;
    StoreKvRowQuantized(x.data(), 1, head_dim, type, want.data(), &want_scale, 1);
    for (float neighbour : {1e-6f, 1.0f, 1e6f}) {
      std::vector<float> big(head_dim, neighbour);
      std::vector<uint8_t> codes(2 * head_dim), sc(2);
      StoreKvRowQuantized(big.data(), 1, head_dim, type, codes.data(), sc.data(), 1);
      StoreKvRowQuantized(x.data(), 1, head_dim, type, codes.data() + head_dim, sc.data() + 1, 1);
      StoreKvRowQuantized(big.data(), 1, head_dim, type, codes.data(), sc.data(), 1);
      EXPECT_EQ(sc[1], want_scale);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), codes.begin() + head_dim));
    }
  }
}

TEST(StoreKvRowQuantizedTest, ZeroRowsHaveScaleZero) {
  std::vector<float> zero(8, 0.0f), one(8, 1.0f);
  std::vector<uint8_t> codes(8, 0x11);
  uint8_t scale = 0x55;
  StoreKvRowQuantized(zero.data(), 1, 8, KvType::kFp8E4M3, codes.data(), &scale, 1);
  EXPECT_EQ(scale, 0);
  EXPECT_EQ(KvScaleValue(scale), 0.0f);
  for (int d = 0; d < 8; ++d) EXPECT_EQ(Fp8E4M3ToFloat(codes[d]), 0.0f);
  StoreKvRowQuantized(one.data(), 1, 8, KvType::kFp8E4M3, codes.data(), &scale, 1);
  EXPECT_EQ(KvScaleValue(scale), KvScaleValue(KvScaleByte(KvType::kFp8E4M3, 1.0f)));
  for (int d = 0; d < 8; ++d) EXPECT_EQ(Fp8E4M3ToFloat(codes[d]) * KvScaleValue(scale), 1.0f);
}

TEST(KvScaleTest, ByteRangeCoversEveryFiniteAmax) {
  for (KvType t : {KvType::kFp8E4M3, KvType::kInt8}) {
    EXPECT_EQ(KvScaleByte(t, std::numeric_limits<float>::denorm_min()), 1);  // 2^-126, the floor
    const uint8_t top = KvScaleByte(t, std::numeric_limits<float>::max());
    EXPECT_LT(top, 255);
    EXPECT_GE(KvScaleValue(top) * KvCodeMax(t), std::numeric_limits<float>::max());
  }
}

class LoadKvRowTest : public ::testing::TestWithParam<Isa> {};

TEST_P(LoadKvRowTest, DequantizesEveryCodeExactly) {
  const Isa isa = GetParam();
  if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) GTEST_SKIP() << "ISA not available";
  const Isa saved = ActiveIsa();
  SetIsaForTesting(isa);
  // All 256 codes, then again shifted by 3 so vector and tail paths see each.
  std::vector<uint8_t> codes;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 256; ++c) codes.push_back(static_cast<uint8_t>(c));
  }
  codes.insert(codes.begin(), {1, 2, 3});
  const int64_t n = static_cast<int64_t>(codes.size());
  std::vector<float> got(n);
  for (float scale : {1.0f, 0.0078125f, 1024.0f}) {
    LoadKvRow(codes.data(), n, KvType::kFp8E4M3, scale, got.data());
    for (int64_t i = 0; i < n; ++i) {
      const float want = Fp8E4M3ToFloat(codes[i]) * scale;
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[i])) << "code " << int{codes[i]};
      } else {
        ASSERT_EQ(got[i], want) << "code " << int{codes[i]} << " scale " << scale;
      }
    }
    LoadKvRow(codes.data(), n, KvType::kInt8, scale, got.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<int8_t>(codes[i]) * scale) << i;
  }
  std::vector<uint16_t> bf(1000);
  std::mt19937 rng(8);
  for (uint16_t& b : bf) b = static_cast<uint16_t>(rng());
  std::vector<float> got_bf(bf.size());
  LoadKvRow(bf.data(), static_cast<int64_t>(bf.size()), KvType::kBf16, 1.0f, got_bf.data());
  for (size_t i = 0; i < bf.size(); ++i) {
    const float want = BF16ToF32(bf[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got_bf[i]));
    } else {
      ASSERT_EQ(got_bf[i], want) << i;
    }
  }
  SetIsaForTesting(saved);
}

INSTANTIATE_TEST_SUITE_P(Isas, LoadKvRowTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512));

// StoreKvRowQuantized on each ISA against the scalar store (the reference
// twin, internal::StoreKvQuantizedBaseline), byte for byte: codes and scales.
class StoreKvRowQuantizedIsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(DetectedIsa())) GTEST_SKIP() << "ISA not available";
    saved_ = ActiveIsa();
    SetIsaForTesting(GetParam());
  }
  void TearDown() override {
    if (!IsSkipped()) SetIsaForTesting(saved_);
  }
  // Stores `rows` (n_heads x head_dim floats) with the active ISA and the
  // reference; expects the same bytes.
  static void ExpectSameAsReference(const std::vector<float>& rows, int n_heads, int head_dim, KvType type) {
    const size_t n = static_cast<size_t>(n_heads) * static_cast<size_t>(head_dim);
    std::vector<uint8_t> got(n), want(n), got_sc(static_cast<size_t>(n_heads) * 3), want_sc(got_sc.size());
    StoreKvRowQuantized(rows.data(), n_heads, head_dim, type, got.data(), got_sc.data(), 3);
    internal::StoreKvQuantizedBaseline(rows.data(), n_heads, head_dim, type, want.data(), want_sc.data(), 3);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], want[i]) << KvTypeName(type) << " element " << i << " = " << rows[i] << " (head_dim "
                                 << head_dim << ")";
    }
    EXPECT_EQ(got_sc, want_sc);
  }
  Isa saved_ = Isa::kScalar;
};

TEST_P(StoreKvRowQuantizedIsaTest, EncodesEveryFloatRangeLikeTheScalarStore) {
  // Rows whose largest magnitude is the code maximum (scale 1), so the
  // encoder sees the values themselves: for every sign, exponent and top 7
  // mantissa bits (random low bits) up to that maximum, plus NaN rows.
  std::mt19937 rng(11);
  for (KvType type : {KvType::kFp8E4M3, KvType::kInt8}) {
    const float top = KvCodeMax(type);
    std::vector<float> values;
    for (uint32_t hi = 0; hi < (1u << 16); ++hi) {
      const uint32_t bits = (hi << 16) | (rng() & 0xffffu);
      float f;
      std::memcpy(&f, &bits, sizeof(f));
      if (std::isnan(f) ? rng() % 64 == 0 : std::fabs(f) <= top) values.push_back(f);
    }
    constexpr int kHeadDim = 128;
    for (size_t i = 0; i < values.size(); i += kHeadDim - 1) {
      std::vector<float> row = {top};
      for (size_t j = i; j < values.size() && row.size() < kHeadDim; ++j) row.push_back(values[j]);
      row.resize(kHeadDim, 0.0f);
      ExpectSameAsReference(row, 1, kHeadDim, type);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(StoreKvRowQuantizedIsaTest, RowsOfEveryShapeAndScale) {
  // Head widths with and without a vector tail, several heads, scales from
  // tiny to huge, ties, zeros, infinities and NaNs inside rows.
  std::mt19937 rng(12);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (KvType type : {KvType::kFp8E4M3, KvType::kInt8}) {
    for (int head_dim : {1, 7, 8, 13, 16, 24, 64, 100, 128, 192}) {
      for (int n_heads : {1, 3}) {
        for (float magnitude : {1e-30f, 1e-6f, 0.5f, 3.0f, 1e4f, 3e38f}) {
          std::vector<float> rows(static_cast<size_t>(n_heads * head_dim));
          for (float& x : rows) x = normal(rng) * magnitude;
          if (rows.size() > 4) {
            rows[1] = 0.0f;
            rows[2] = -0.0f;
            rows[3] = magnitude * 0.5f;  // a tie for some scales
          }
          ExpectSameAsReference(rows, n_heads, head_dim, type);
          rows[0] = std::numeric_limits<float>::infinity();
          rows.back() = std::numeric_limits<float>::quiet_NaN();
          ExpectSameAsReference(rows, n_heads, head_dim, type);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, StoreKvRowQuantizedIsaTest, ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512));

}  // namespace
}  // namespace pagoda::kernels
