#include "kv/block_convert.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kv/block_pool.h"

namespace pagoda::kv {
namespace {

using kernels::KvType;

constexpr uint64_t kModel = 0x00c0ffee12345678ULL;
constexpr KvType kAllTypes[] = {KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8};

struct Shape {
  std::string name;
  std::vector<KvLayerWidths> layers;
  int32_t block_size = 4;
};

void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

// Several heads per layer, an odd head count, a block size that is no power
// of two, and an MLA-like layer (no V) between two ordinary ones.
std::vector<Shape> Shapes() {
  return {
      {"OneHead", {{16, 16, 1}}, 4},
      {"TwoLayersTwoHeads", {{8, 8, 2}, {8, 8, 2}}, 4},
      {"ThreeHeadsOddBlock", {{24, 12, 3}, {6, 6, 3}}, 5},
      {"MlaLayerWithoutV", {{16, 16, 2}, {40, 0, 1}, {8, 8, 4}}, 3},
  };
}

BlockLayout MakeLayout(const Shape& s, KvType type) {
  BlockLayout l;
  l.model_fingerprint = kModel;
  l.layers = s.layers;
  l.type = type;
  l.block_size = s.block_size;
  BlockPoolOptions po;
  po.layers = l.layers;
  po.type = type;
  po.block_size = l.block_size;
  l.block_bytes = BlockPool::BlockBytes(po);
  return l;
}

BlockRegions RegionsOf(const BlockLayout& l) {
  BlockPoolOptions po;
  po.layers = l.layers;
  po.type = l.type;
  po.block_size = l.block_size;
  return BlockPool::Regions(po);
}

// ---- Independent float64 references of the element types -------------------

double HalfToDouble(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int e = (h >> 10) & 31;
  const int m = h & 1023;
  double v;
  if (e == 0) {
    v = std::ldexp(static_cast<double>(m), -24);
  } else if (e == 31) {
    v = m == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(static_cast<double>(1024 + m), e - 25);
  }
  return sign ? -v : v;
}

double Bf16ToDouble(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// OCP e4m3fn: bias 7, 3 mantissa bits, subnormals m * 2^-9, no infinities.
double Fp8ToDouble(uint8_t c) {
  const int e = (c >> 3) & 15;
  const int m = c & 7;
  const double v = e == 0 ? std::ldexp(static_cast<double>(m), -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return (c & 0x80) ? -v : v;
}

// The E8M0 scale byte: 2^(byte - 127); 0 stands for 0.
double ScaleOf(uint8_t byte) { return byte == 0 ? 0.0 : std::ldexp(1.0, byte - 127); }

// Reads a payload by its layout, element by element, in double.
struct Reader {
  const BlockLayout& l;
  BlockRegions regions;
  const uint8_t* p;

  Reader(const BlockLayout& layout, const std::vector<uint8_t>& payload)
      : l(layout), regions(RegionsOf(layout)), p(payload.data()) {}

  int64_t Width(size_t layer, int kv) const { return kv == 0 ? l.layers[layer].k : l.layers[layer].v; }
  int64_t HeadDim(size_t layer, int kv) const { return Width(layer, kv) / l.layers[layer].n_head_kv; }
  const uint8_t* Elem(size_t layer, int kv, int32_t pos, int64_t i) const {
    const int64_t region = kv == 0 ? regions.k_offset[layer] : regions.v_offset[layer];
    return p + region + (pos * Width(layer, kv) + i) * kernels::KvTypeSize(l.type);
  }
  // Byte offset of a (layer, K or V, position, head) scale: [n_head_kv][block_size] K's, then V's.
  int64_t ScaleIndex(size_t layer, int kv, int32_t pos, int head) const {
    const int64_t heads = l.layers[layer].n_head_kv;
    return regions.scale_offset[layer] + (kv == 0 ? 0 : heads * l.block_size) + head * l.block_size + pos;
  }
  uint8_t ScaleByte(size_t layer, int kv, int32_t pos, int head) const {
    return p[ScaleIndex(layer, kv, pos, head)];
  }
  int Head(size_t layer, int kv, int64_t i) const { return static_cast<int>(i / HeadDim(layer, kv)); }
  double Scale(size_t layer, int kv, int32_t pos, int64_t i) const {
    return ScaleOf(ScaleByte(layer, kv, pos, Head(layer, kv, i)));
  }
  double Value(size_t layer, int kv, int32_t pos, int64_t i) const {
    const uint8_t* e = Elem(layer, kv, pos, i);
    switch (l.type) {
      case KvType::kF32: {
        float f;
        std::memcpy(&f, e, 4);
        return f;
      }
      case KvType::kF16: {
        uint16_t h;
        std::memcpy(&h, e, 2);
        return HalfToDouble(h);
      }
      case KvType::kBf16: {
        uint16_t b;
        std::memcpy(&b, e, 2);
        return Bf16ToDouble(b);
      }
      case KvType::kFp8E4M3:
        return Fp8ToDouble(*e) * Scale(layer, kv, pos, i);
      case KvType::kInt8:
        return static_cast<int8_t>(*e) * Scale(layer, kv, pos, i);
    }
    return NAN;
  }
};

// Calls fn(layer, kv, pos, i) for every stored element.
template <class Fn>
void ForEachElement(const BlockLayout& l, Fn fn) {
  for (size_t layer = 0; layer < l.layers.size(); ++layer) {
    for (int kv = 0; kv < 2; ++kv) {
      const int64_t width = kv == 0 ? l.layers[layer].k : l.layers[layer].v;
      for (int32_t pos = 0; pos < l.block_size; ++pos) {
        for (int64_t i = 0; i < width; ++i) fn(layer, kv, pos, i);
      }
    }
  }
}

// Calls fn(layer, kv, pos, head) for every (position, head) row of a layer's K and V.
template <class Fn>
void ForEachHeadRow(const BlockLayout& l, Fn fn) {
  for (size_t layer = 0; layer < l.layers.size(); ++layer) {
    for (int kv = 0; kv < 2; ++kv) {
      if ((kv == 0 ? l.layers[layer].k : l.layers[layer].v) == 0) continue;
      for (int32_t pos = 0; pos < l.block_size; ++pos) {
        for (int h = 0; h < l.layers[layer].n_head_kv; ++h) fn(layer, kv, pos, h);
      }
    }
  }
}

// An f32 payload of random values whose magnitude differs from row to row
// (2^-12 .. 2^12, so the per-row scales differ), with some exact zeros and
// one all-zero head row (scale byte 0).
std::vector<uint8_t> RandomF32Payload(const BlockLayout& l, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exp(-12, 12);
  std::uniform_int_distribution<int> one_in(0, 19);
  std::vector<uint8_t> payload(l.block_bytes, 0);
  const Reader r(l, payload);
  const int64_t zero_row = r.HeadDim(0, 0);  // layer 0, K, position 1, head 0: all zero
  for (size_t layer = 0; layer < l.layers.size(); ++layer) {
    for (int kv = 0; kv < 2; ++kv) {
      for (int32_t pos = 0; pos < l.block_size; ++pos) {
        const float mag = std::ldexp(1.0f, exp(rng));
        for (int64_t i = 0; i < r.Width(layer, kv); ++i) {
          float v = one_in(rng) == 0 ? 0.0f : normal(rng) * mag;
          if (layer == 0 && kv == 0 && pos == 1 && i < zero_row) v = 0.0f;
          std::memcpy(const_cast<uint8_t*>(r.Elem(layer, kv, pos, i)), &v, 4);
        }
      }
    }
  }
  return payload;
}

Status Convert(const BlockLayout& from, const std::vector<uint8_t>& src, const BlockLayout& to,
               std::vector<uint8_t>* dst) {
  dst->assign(to.block_bytes, 0xCD);
  return ConvertBlockPayload(from, src.data(), to, dst->data());
}

// ---- Tests -------------------------------------------------------------------

class BlockConvertTest : public ::testing::TestWithParam<Shape> {};

TEST_P(BlockConvertTest, RegionsAreWhereThePoolPutsThem) {
  for (KvType t : kAllTypes) {
    const BlockLayout l = MakeLayout(GetParam(), t);
    BlockPoolOptions po;
    po.layers = l.layers;
    po.type = t;
    po.block_size = l.block_size;
    po.memory_bytes = l.block_bytes;
    auto pool = BlockPool::Create(po);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    BlockPool& p = **pool;
    const BlockId b = p.Allocate();
    ASSERT_NE(b, kNoBlock);
    const auto* base = static_cast<const uint8_t*>(p.data(b));
    const BlockRegions r = RegionsOf(l);
    EXPECT_EQ(r.block_bytes, l.block_bytes);
    ASSERT_EQ(r.k_offset.size(), l.layers.size());
    ASSERT_EQ(r.v_offset.size(), l.layers.size());
    ASSERT_EQ(r.scale_offset.size(), kernels::KvTypeHasScales(t) ? l.layers.size() : 0u);
    for (int layer = 0; layer < p.n_layers(); ++layer) {
      EXPECT_EQ(static_cast<const uint8_t*>(p.k(b, layer)) - base, r.k_offset[layer]) << layer;
      if (l.layers[layer].v > 0) {
        EXPECT_EQ(static_cast<const uint8_t*>(p.v(b, layer)) - base, r.v_offset[layer]) << layer;
      }
      if (kernels::KvTypeHasScales(t)) {
        EXPECT_EQ(p.k_scales(b, layer) - base, r.scale_offset[layer]) << layer;
        if (l.layers[layer].v > 0) {
          EXPECT_EQ(p.v_scales(b, layer) - base,
                    r.scale_offset[layer] + int64_t{l.layers[layer].n_head_kv} * l.block_size)
              << layer;
        }
      }
    }
  }
}

TEST_P(BlockConvertTest, LayoutWithTypeSizesAPoolOfThatType) {
  const BlockLayout f16 = MakeLayout(GetParam(), KvType::kF16);
  for (KvType t : kAllTypes) {
    const BlockLayout l = LayoutWithType(f16, t, 0x1234);
    EXPECT_EQ(l.type, t);
    EXPECT_EQ(l.model_fingerprint, 0x1234u);
    EXPECT_EQ(l.block_size, f16.block_size);
    EXPECT_EQ(l.block_bytes, MakeLayout(GetParam(), t).block_bytes) << kernels::KvTypeName(t);
  }
}

TEST_P(BlockConvertTest, SameTypeIsByteIdentical) {
  std::mt19937 rng(7);
  for (KvType t : kAllTypes) {
    const BlockLayout l = MakeLayout(GetParam(), t);
    std::vector<uint8_t> src(l.block_bytes);
    for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> dst;
    ASSERT_TRUE(Convert(l, src, l, &dst).ok()) << kernels::KvTypeName(t);
    EXPECT_EQ(dst, src) << kernels::KvTypeName(t);
    // Another writer's fingerprint does not matter to the payload.
    BlockLayout other = l;
    other.model_fingerprint = 99;
    ASSERT_TRUE(Convert(other, src, l, &dst).ok());
    EXPECT_EQ(dst, src);
  }
}

TEST_P(BlockConvertTest, F16ToF32IsExact) {
  const BlockLayout from = MakeLayout(GetParam(), KvType::kF16);
  const BlockLayout to = MakeLayout(GetParam(), KvType::kF32);
  std::mt19937 rng(11);
  std::vector<uint8_t> src(from.block_bytes, 0);
  const Reader in_layout(from, src);
  // Every finite half: random bit patterns (subnormals and both zeros
  // included), exponent 31 (inf, NaN) excluded.
  ForEachElement(from, [&](size_t layer, int kv, int32_t pos, int64_t i) {
    uint16_t h;
    do h = static_cast<uint16_t>(rng());
    while (((h >> 10) & 31) == 31);
    std::memcpy(const_cast<uint8_t*>(in_layout.Elem(layer, kv, pos, i)), &h, 2);
  });
  std::vector<uint8_t> dst;
  ASSERT_TRUE(Convert(from, src, to, &dst).ok());
  const Reader in(from, src), out(to, dst);
  int64_t n = 0;
  ForEachElement(from, [&](size_t layer, int kv, int32_t pos, int64_t i) {
    const double want = in.Value(layer, kv, pos, i);
    const double got = out.Value(layer, kv, pos, i);
    ASSERT_EQ(got, want) << "layer " << layer << " kv " << kv << " pos " << pos << " i " << i;
    ASSERT_EQ(std::signbit(got), std::signbit(want));
    ++n;
  });
  EXPECT_GT(n, 0);
}

// f32 -> f16 / bf16: round to nearest, so within half a unit in the last place.
TEST_P(BlockConvertTest, F32ToHalfTypesRoundsToNearest) {
  const BlockLayout from = MakeLayout(GetParam(), KvType::kF32);
  const std::vector<uint8_t> src = RandomF32Payload(from, 21);
  for (KvType t : {KvType::kF16, KvType::kBf16}) {
    const int mantissa_bits = t == KvType::kF16 ? 10 : 7;
    const int min_exp = t == KvType::kF16 ? -14 : -126;  // below it f16 steps are the subnormal ones
    const BlockLayout to = MakeLayout(GetParam(), t);
    std::vector<uint8_t> dst;
    ASSERT_TRUE(Convert(from, src, to, &dst).ok());
    const Reader in(from, src), out(to, dst);
    ForEachElement(from, [&](size_t layer, int kv, int32_t pos, int64_t i) {
      const double x = in.Value(layer, kv, pos, i);
      const double y = out.Value(layer, kv, pos, i);
      int e = 0;
      std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
      const double ulp = std::ldexp(1.0, std::max(e - 1, min_exp) - mantissa_bits);
      ASSERT_LE(std::fabs(y - x), ulp / 2) << kernels::KvTypeName(t) << " x=" << x << " y=" << y;
    });
  }
}

// f32 -> fp8_e4m3 / int8: every element dequantizes (code * 2^(scale - 127))
// to within half a quantization step of its source, and each (position,
// head) row's scale is the smallest power of two its largest element fits.
TEST_P(BlockConvertTest, F32ToScaledTypesIsWithinHalfAStep) {
  const BlockLayout from = MakeLayout(GetParam(), KvType::kF32);
  const std::vector<uint8_t> src = RandomF32Payload(from, 31);
  for (KvType t : {KvType::kFp8E4M3, KvType::kInt8}) {
    const bool fp8 = t == KvType::kFp8E4M3;
    const double code_max = fp8 ? 448.0 : 127.0;
    const BlockLayout to = MakeLayout(GetParam(), t);
    std::vector<uint8_t> dst;
    ASSERT_TRUE(Convert(from, src, to, &dst).ok());
    const Reader in(from, src), out(to, dst);
    int zero_rows = 0;
    ForEachHeadRow(from, [&](size_t layer, int kv, int32_t pos, int h) {
      const int64_t hd = in.HeadDim(layer, kv);
      double amax = 0;
      for (int64_t d = 0; d < hd; ++d) amax = std::max(amax, std::fabs(in.Value(layer, kv, pos, h * hd + d)));
      const uint8_t sb = out.ScaleByte(layer, kv, pos, h);
      if (amax == 0) {
        ++zero_rows;
        EXPECT_EQ(sb, 0) << "an all-zero row has scale 0";
        return;
      }
      const double s = ScaleOf(sb);
      ASSERT_GT(s, 0.0);
      EXPECT_LE(amax, code_max * s) << kernels::KvTypeName(t) << " layer " << layer << " pos " << pos;
      EXPECT_GT(amax, code_max * s / 2) << kernels::KvTypeName(t) << ": a smaller scale fits";
    });
    EXPECT_GE(zero_rows, 1);
    ForEachElement(from, [&](size_t layer, int kv, int32_t pos, int64_t i) {
      const double x = in.Value(layer, kv, pos, i);
      const double s = out.Scale(layer, kv, pos, i);
      const double got = out.Value(layer, kv, pos, i);
      const uint8_t code = *out.Elem(layer, kv, pos, i);
      if (s == 0) {
        ASSERT_EQ(x, 0.0);
        ASSERT_EQ(got, 0.0);
        return;
      }
      const double y = std::fabs(x) / s;  // the value in code units (exact: s is a power of two)
      double step;
      if (fp8) {
        ASSERT_NE(code & 0x7f, 0x7f) << "NaN code";
        int e = 0;
        std::frexp(y, &e);  // y in [2^(e-1), 2^e)
        step = y < std::ldexp(1.0, -6) ? std::ldexp(1.0, -9) : std::ldexp(1.0, e - 1 - 3);
      } else {
        ASSERT_NE(code, 0x80) << "int8 codes are in [-127, 127]";
        step = 1.0;
      }
      ASSERT_LE(std::fabs(got - x), step / 2 * s)
          << kernels::KvTypeName(t) << " layer " << layer << " kv " << kv << " pos " << pos << " i " << i
          << " x=" << x << " got=" << got;
    });
  }
}

// A scaled block whose every nonzero (position, head) row uses its scale
// fully (the largest |code| above half the code range: what storing its own
// values would choose), and one all-zero row with scale byte 0. Scales stay
// within 2^-10 .. 2^5 so every value is exact in f16.
std::vector<uint8_t> CanonicalScaledPayload(const BlockLayout& l, uint32_t seed) {
  const bool fp8 = l.type == KvType::kFp8E4M3;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> scale(127 - 10, 127 + 5);
  std::vector<uint8_t> payload(l.block_bytes, 0);
  const Reader r(l, payload);
  bool zero_row = false;
  ForEachHeadRow(l, [&](size_t layer, int kv, int32_t pos, int h) {
    uint8_t* sc = payload.data() + r.ScaleIndex(layer, kv, pos, h);
    const int64_t hd = r.HeadDim(layer, kv);
    auto* codes = const_cast<uint8_t*>(r.Elem(layer, kv, pos, h * hd));
    if (!zero_row) {
      zero_row = true;
      *sc = 0;
      return;  // codes stay 0
    }
    *sc = static_cast<uint8_t>(scale(rng));
    for (int64_t d = 0; d < hd; ++d) {
      uint8_t c;
      if (fp8) {
        do c = static_cast<uint8_t>(rng());
        while ((c & 0x7f) == 0x7f);
      } else {
        do c = static_cast<uint8_t>(rng());
        while (c == 0x80);
      }
      codes[d] = c;
    }
    // One element uses the range: |value| >= 240 (fp8) or >= 64 (int8) codes.
    const int64_t d = static_cast<int64_t>(rng() % hd);
    if (fp8) {
      codes[d] = static_cast<uint8_t>((rng() & 0x80) | (15 << 3) | (rng() % 7));  // 256 .. 448
    } else {
      const int v = 64 + static_cast<int>(rng() % 64);
      codes[d] = static_cast<uint8_t>(static_cast<int8_t>((rng() & 1) ? -v : v));
    }
  });
  return payload;
}

TEST_P(BlockConvertTest, ScaledToF16AndBackIsTheIdentity) {
  for (KvType t : {KvType::kFp8E4M3, KvType::kInt8}) {
    const BlockLayout scaled = MakeLayout(GetParam(), t);
    const BlockLayout f16 = MakeLayout(GetParam(), KvType::kF16);
    const std::vector<uint8_t> src = CanonicalScaledPayload(scaled, 41);
    std::vector<uint8_t> mid, back;
    ASSERT_TRUE(Convert(scaled, src, f16, &mid).ok());
    const Reader in(scaled, src), m(f16, mid);
    ForEachElement(scaled, [&](size_t layer, int kv, int32_t pos, int64_t i) {
      ASSERT_EQ(m.Value(layer, kv, pos, i), in.Value(layer, kv, pos, i))
          << kernels::KvTypeName(t) << " layer " << layer << " kv " << kv << " pos " << pos << " i " << i;
    });
    ASSERT_TRUE(Convert(f16, mid, scaled, &back).ok());
    EXPECT_EQ(back, src) << kernels::KvTypeName(t);
  }
}

// Any fp8 block (scales not necessarily the smallest) keeps its values
// through f16, and is byte-stable from the first round trip on.
TEST_P(BlockConvertTest, Fp8ThroughF16KeepsEveryValue) {
  const BlockLayout f32 = MakeLayout(GetParam(), KvType::kF32);
  const BlockLayout fp8 = MakeLayout(GetParam(), KvType::kFp8E4M3);
  const BlockLayout f16 = MakeLayout(GetParam(), KvType::kF16);
  // Moderate magnitudes: every fp8 value is exact in f16.
  std::vector<uint8_t> src32(f32.block_bytes, 0);
  {
    std::mt19937 rng(51);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    const Reader r(f32, src32);
    ForEachElement(f32, [&](size_t layer, int kv, int32_t pos, int64_t i) {
      const float v = u(rng);
      std::memcpy(const_cast<uint8_t*>(r.Elem(layer, kv, pos, i)), &v, 4);
    });
  }
  std::vector<uint8_t> a, mid, b, mid2, c;
  ASSERT_TRUE(Convert(f32, src32, fp8, &a).ok());
  ASSERT_TRUE(Convert(fp8, a, f16, &mid).ok());
  ASSERT_TRUE(Convert(f16, mid, fp8, &b).ok());
  const Reader ra(fp8, a), rb(fp8, b);
  ForEachElement(fp8, [&](size_t layer, int kv, int32_t pos, int64_t i) {
    ASSERT_EQ(rb.Value(layer, kv, pos, i), ra.Value(layer, kv, pos, i))
        << "layer " << layer << " kv " << kv << " pos " << pos << " i " << i;
  });
  ASSERT_TRUE(Convert(fp8, b, f16, &mid2).ok());
  ASSERT_TRUE(Convert(f16, mid2, fp8, &c).ok());
  EXPECT_EQ(mid2, mid);
  EXPECT_EQ(c, b);
}

// Every pair of types: values that every type holds exactly (small
// integers times powers of two, one per row sharing the row's scale) come
// through exactly.
TEST_P(BlockConvertTest, EveryPairOfTypesKeepsExactValues) {
  const BlockLayout f32 = MakeLayout(GetParam(), KvType::kF32);
  std::vector<uint8_t> src32(f32.block_bytes, 0);
  {
    std::mt19937 rng(61);
    const Reader r(f32, src32);
    ForEachHeadRow(f32, [&](size_t layer, int kv, int32_t pos, int h) {
      const int64_t hd = r.HeadDim(layer, kv);
      const int e = static_cast<int>(rng() % 9) - 4;
      for (int64_t d = 0; d < hd; ++d) {
        // |code| <= 15 with the row's top at 8..15: exact in e4m3 (4
        // significant bits) only below 16, in int8 at any scale, f16, bf16.
        const int code = d == 0 ? 8 + static_cast<int>(rng() % 8) : static_cast<int>(rng() % 16);
        const float v = std::ldexp(static_cast<float>((rng() & 1) ? -code : code), e);
        std::memcpy(const_cast<uint8_t*>(r.Elem(layer, kv, pos, h * hd + d)), &v, 4);
      }
    });
  }
  for (KvType a : kAllTypes) {
    for (KvType b : kAllTypes) {
      const BlockLayout la = MakeLayout(GetParam(), a);
      const BlockLayout lb = MakeLayout(GetParam(), b);
      std::vector<uint8_t> pa, pb;
      ASSERT_TRUE(Convert(f32, src32, la, &pa).ok());
      ASSERT_TRUE(Convert(la, pa, lb, &pb).ok()) << kernels::KvTypeName(a) << " -> " << kernels::KvTypeName(b);
      const Reader in(f32, src32), out(lb, pb);
      ForEachElement(f32, [&](size_t layer, int kv, int32_t pos, int64_t i) {
        ASSERT_EQ(out.Value(layer, kv, pos, i), in.Value(layer, kv, pos, i))
            << kernels::KvTypeName(a) << " -> " << kernels::KvTypeName(b) << " layer " << layer << " kv " << kv
            << " pos " << pos << " i " << i;
      });
    }
  }
}

// The bytes outside the K/V rows and scales (each region's padding to its
// 64-byte line) are written as zeros, never left as they were.
TEST_P(BlockConvertTest, PaddingIsZeroed) {
  const BlockLayout from = MakeLayout(GetParam(), KvType::kF32);
  const std::vector<uint8_t> src = RandomF32Payload(from, 71);
  for (KvType t : {KvType::kF16, KvType::kFp8E4M3, KvType::kInt8}) {
    const BlockLayout to = MakeLayout(GetParam(), t);
    std::vector<uint8_t> dst;
    ASSERT_TRUE(Convert(from, src, to, &dst).ok());
    std::vector<bool> used(dst.size(), false);
    const Reader out(to, dst);
    ForEachElement(to, [&](size_t layer, int kv, int32_t pos, int64_t i) {
      const size_t at = static_cast<size_t>(out.Elem(layer, kv, pos, i) - dst.data());
      for (int64_t k = 0; k < kernels::KvTypeSize(t); ++k) used[at + k] = true;
    });
    if (kernels::KvTypeHasScales(t)) {
      ForEachHeadRow(to, [&](size_t layer, int kv, int32_t pos, int h) {
        used[out.ScaleIndex(layer, kv, pos, h)] = true;
      });
    }
    for (size_t i = 0; i < dst.size(); ++i) {
      if (!used[i]) {
        ASSERT_EQ(dst[i], 0) << kernels::KvTypeName(t) << " byte " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlockConvertTest, ::testing::ValuesIn(Shapes()),
                         [](const ::testing::TestParamInfo<Shape>& i) { return i.param.name; });

TEST(BlockConvertLayoutTest, LayoutsDifferingInMoreThanTheTypeAreInvalidArgument) {
  const Shape base{"base", {{8, 8, 2}, {8, 8, 2}}, 4};
  const BlockLayout f16 = MakeLayout(base, KvType::kF16);
  std::vector<uint8_t> src(f16.block_bytes, 0x11);
  auto refused = [&](const BlockLayout& to, const std::string& what) {
    std::vector<uint8_t> dst(std::max<int64_t>(to.block_bytes, 1), 0xAB);
    const Status st = ConvertBlockPayload(f16, src.data(), to, dst.data());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << what << ": " << st.ToString();
    for (uint8_t b : dst) ASSERT_EQ(b, 0xAB) << what << ": nothing written";
  };
  Shape s = base;
  s.layers[1].k = 16;
  refused(MakeLayout(s, KvType::kFp8E4M3), "another K width");
  s = base;
  s.layers[0].v = 16;
  refused(MakeLayout(s, KvType::kF16), "another V width");
  s = base;
  s.layers[0].v = 0;
  refused(MakeLayout(s, KvType::kF32), "no V");
  s = base;
  s.layers[0].n_head_kv = 4;
  refused(MakeLayout(s, KvType::kInt8), "another head count");
  s = base;
  s.block_size = 8;
  refused(MakeLayout(s, KvType::kF16), "another block size");
  s = base;
  s.layers.pop_back();
  refused(MakeLayout(s, KvType::kF32), "fewer layers");
  s = base;
  s.layers.push_back({8, 8, 2});
  refused(MakeLayout(s, KvType::kF16), "more layers");
  BlockLayout wrong_bytes = MakeLayout(base, KvType::kFp8E4M3);
  wrong_bytes.block_bytes += 64;
  refused(wrong_bytes, "block_bytes not the pool's");
  // Invalid on both sides alike: a head count that does not divide the width.
  Shape bad = base;
  bad.layers[0].n_head_kv = 3;
  BlockLayout bad_from = MakeLayout(bad, KvType::kF16);
  EXPECT_EQ(bad_from.block_bytes, 0);
  bad_from.block_bytes = f16.block_bytes;
  BlockLayout bad_to = LayoutWithType(bad_from, KvType::kInt8, kModel);
  EXPECT_EQ(bad_to.block_bytes, 0);
  bad_to.block_bytes = 4096;
  std::vector<uint8_t> dst(4096, 0xAB);
  EXPECT_EQ(ConvertBlockPayload(bad_from, src.data(), bad_to, dst.data()).code(), StatusCode::kInvalidArgument);
  for (uint8_t b : dst) ASSERT_EQ(b, 0xAB);
}

}  // namespace
}  // namespace pagoda::kv
