// The ops of kernels/cpu/ops.h against their scalar reference twins, with
// the error bounds stated per op. Attention is checked on every ISA path.
#include "kernels/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/kv_quant.h"
#include "kernels/cpu/matmul.h"
#include "tensor/fp16.h"

namespace pagoda::kernels {
namespace {

std::vector<float> RandomVector(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double MaxRelError(const std::vector<float>& got, const std::vector<float>& want) {
  double max_abs = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_abs = std::max(max_abs, static_cast<double>(std::abs(got[i] - want[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::abs(want[i])));
  }
  return max_abs / std::max(max_ref, 1e-30);
}

TEST(RmsNormTest, MatchesReference) {
  for (int64_t n : {1, 7, 64, 2048, 2053}) {
    const auto x = RandomVector(3 * n, 1, 3.0f);
    const auto w = RandomVector(n, 2);
    std::vector<float> got(3 * n), want(3 * n);
    RmsNorm(x.data(), w.data(), 1e-5f, 3, n, got.data());
    RmsNormReference(x.data(), w.data(), 1e-5f, 3, n, want.data());
    EXPECT_LT(MaxRelError(got, want), 1e-6) << "n " << n;  // float products vs double
    RmsNorm(x.data(), nullptr, 1e-5f, 3, n, got.data());
    RmsNormReference(x.data(), nullptr, 1e-5f, 3, n, want.data());
    EXPECT_LT(MaxRelError(got, want), 1e-6) << "n " << n << " no weight";
  }
}

TEST(RmsNormTest, WorksInPlace) {
  auto x = RandomVector(128, 3);
  std::vector<float> want(128);
  RmsNormReference(x.data(), nullptr, 1e-6f, 2, 64, want.data());
  RmsNorm(x.data(), nullptr, 1e-6f, 2, 64, x.data());
  EXPECT_LT(MaxRelError(x, want), 1e-6);
}

TEST(LayerNormTest, MatchesReference) {
  for (int64_t n : {1, 7, 64, 768, 2053}) {
    // A large common offset: the two-pass variance must not cancel.
    auto x = RandomVector(3 * n, 11, 2.0f);
    for (float& v : x) v += 40.0f;
    const auto w = RandomVector(n, 12);
    const auto b = RandomVector(n, 13);
    std::vector<float> got(3 * n), want(3 * n);
    LayerNorm(x.data(), w.data(), b.data(), 1e-12f, 3, n, got.data());
    LayerNormReference(x.data(), w.data(), b.data(), 1e-12f, 3, n, want.data());
    if (n == 1) {  // one element: (x - mean) = 0, only the bias remains
      for (int r = 0; r < 3; ++r) EXPECT_EQ(got[r], b[0]);
      continue;
    }
    EXPECT_LT(MaxRelError(got, want), 2e-6) << "n " << n;  // float products vs double
    LayerNorm(x.data(), nullptr, nullptr, 1e-5f, 3, n, got.data());
    LayerNormReference(x.data(), nullptr, nullptr, 1e-5f, 3, n, want.data());
    EXPECT_LT(MaxRelError(got, want), 2e-6) << "n " << n << " no weight";
  }
}

TEST(LayerNormTest, WorksInPlaceAndNormalises) {
  auto x = RandomVector(256, 14, 5.0f);
  LayerNorm(x.data(), nullptr, nullptr, 1e-12f, 2, 128, x.data());
  for (int r = 0; r < 2; ++r) {
    double mean = 0.0, sq = 0.0;
    for (int i = 0; i < 128; ++i) mean += x[r * 128 + i];
    mean /= 128;
    for (int i = 0; i < 128; ++i) sq += (x[r * 128 + i] - mean) * (x[r * 128 + i] - mean);
    EXPECT_NEAR(mean, 0.0, 1e-6);
    EXPECT_NEAR(sq / 128, 1.0, 1e-5);
  }
}

TEST(GeluTest, MatchesTanhFormReference) {
  auto x = RandomVector(1000, 15, 4.0f);
  x[0] = -100.0f;
  x[1] = 100.0f;
  x[2] = 0.0f;
  x[3] = -9.5f;
  std::vector<float> got(1000), want(1000);
  GeluReference(x.data(), 1000, want.data());
  // Known values of the tanh form: gelu(1) = 0.841192, gelu(-1) = -0.158808.
  const float ones[2] = {1.0f, -1.0f};
  float g[2];
  GeluReference(ones, 2, g);
  EXPECT_NEAR(g[0], 0.841192f, 1e-6);
  EXPECT_NEAR(g[1], -0.158808f, 1e-6);
  const Isa saved = ActiveIsa();
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) continue;
    SetIsaForTesting(isa);
    Gelu(x.data(), 1000, got.data());
    // ExpApprox's 2e-7 relative error plus the float rounding of its
    // argument (|2u| up to 88: 88 * 6e-8 absolute, that much relative in e^-2u).
    for (int i = 0; i < 1000; ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-5 * std::abs(want[i]) + 1e-30) << IsaName(isa) << " x " << x[i];
    }
  }
  SetIsaForTesting(saved);
}

struct RopeCase {
  bool neox;
  int head_dim;
  int n_rot;
  double freq_scale;
  bool factors;
};

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesReference) {
  const RopeCase c = GetParam();
  const int n_heads = 3, n_tokens = 5;
  const int64_t stride = n_heads * c.head_dim + 4;  // rows may be wider than the heads
  const std::vector<int32_t> pos = {0, 1, 17, 500, 4095};
  std::vector<float> factors;
  for (int i = 0; i < c.n_rot / 2; ++i) factors.push_back(1.0f + static_cast<float>(i % 4) * 2.5f);
  const float* ff = c.factors ? factors.data() : nullptr;
  auto got = RandomVector(n_tokens * stride, 4);
  auto want = got;
  std::vector<double> inv_freq(c.n_rot / 2);
  std::vector<float> cs(n_tokens * c.n_rot / 2), sn(n_tokens * c.n_rot / 2);
  RopeInvFreq(10000.0, c.n_rot, c.freq_scale, ff, inv_freq.data());
  RopeTables(inv_freq.data(), c.n_rot / 2, pos.data(), n_tokens, cs.data(), sn.data());
  Rope(got.data(), n_tokens, stride, n_heads, c.head_dim, c.n_rot, c.neox, cs.data(), sn.data());
  RopeReference(want.data(), n_tokens, stride, n_heads, c.head_dim, c.n_rot, c.neox, pos.data(),
                10000.0, c.freq_scale, ff);
  // Angles in double; only cos/sin and the products are rounded to float.
  EXPECT_LT(MaxRelError(got, want), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Orderings, RopeTest,
                         ::testing::Values(RopeCase{false, 64, 64, 1.0, false},
                                           RopeCase{true, 64, 64, 1.0, false},
                                           RopeCase{false, 16, 16, 0.25, true},
                                           RopeCase{true, 128, 128, 1.0, true},
                                           RopeCase{false, 32, 16, 1.0, false},  // partial rotary
                                           RopeCase{true, 32, 16, 0.5, false}));

TEST(RopeTest, AdjacentAndNeoxPairsDiffer) {
  // One head of 4 dims at position 1: normal rotates (0,1),(2,3); NeoX (0,2),(1,3).
  std::vector<float> a = {1, 0, 0, 0}, b = {1, 0, 0, 0};
  const int32_t pos = 1;
  RopeReference(a.data(), 1, 4, 1, 4, 4, false, &pos, 10000.0, 1.0, nullptr);
  RopeReference(b.data(), 1, 4, 1, 4, 4, true, &pos, 10000.0, 1.0, nullptr);
  EXPECT_NEAR(a[1], std::sin(1.0), 1e-6);
  EXPECT_NEAR(a[2], 0.0, 1e-6);
  EXPECT_NEAR(b[1], 0.0, 1e-6);
  EXPECT_NEAR(b[2], std::sin(1.0), 1e-6);
}

TEST(SoftmaxTest, MatchesReference) {
  for (int64_t n : {1, 5, 512, 32000}) {
    auto got = RandomVector(n, 5, 8.0f);
    auto want = got;
    Softmax(got.data(), n);
    SoftmaxReference(want.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], 1e-6 * std::max(want[i], 1e-3f)) << i;
  }
}

TEST(SiluMulTest, MatchesReference) {
  auto gate = RandomVector(1000, 6, 6.0f);
  gate[0] = -100.0f;
  gate[1] = 100.0f;
  const auto up = RandomVector(1000, 7);
  std::vector<float> got(1000), want(1000);
  SiluMulReference(gate.data(), up.data(), 1000, want.data());
  // Every ISA twin (the AVX-512 and AVX2 ones are compiled separately).
  const Isa saved = ActiveIsa();
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) continue;
    SetIsaForTesting(isa);
    SiluMul(gate.data(), up.data(), 1000, got.data());
    for (int i = 0; i < 1000; ++i) ASSERT_NEAR(got[i], want[i], 1e-6 * std::abs(want[i]) + 1e-30) << IsaName(isa) << " " << i;
  }
  SetIsaForTesting(saved);
}

// ---- Attention -------------------------------------------------------------

struct AttnCase {
  int n_head, n_head_kv, head_dim;
  std::vector<int> prefix;   // per sequence: positions already in the cache
  std::vector<int> n_new;    // per sequence: query rows in this batch
  int block_size;            // paged layout when < context
};

// A paged cache in head-major blocks ([n_head_kv][block_size][head_dim]),
// the layout a paged cache may choose; the kernel must not care. Elements of
// `type`; f16 rounded by tensor/fp16.h, independently of the kernels.
// bf16 / fp8 / int8 blocks are written through StoreKvRowQuantized / bf16
// rounding one head row at a time, each row with its own scale byte, as in a
// real cache.
struct PagedKv {
  std::vector<std::vector<float>> k_storage, v_storage;
  std::vector<std::vector<uint16_t>> k_half, v_half;
  std::vector<std::vector<uint8_t>> k_codes, v_codes;
  std::vector<std::vector<uint8_t>> k_scale, v_scale;  // per block: [n_head_kv][block_size]
  std::vector<const void*> k_blocks, v_blocks;
  std::vector<const uint8_t*> k_scales, v_scales;
  KvView view;
};

// One block ([n_head_kv][block_size][head_dim] floats) in `type`.
void EncodeBlock(const std::vector<float>& x, int n_head_kv, int block_size, int head_dim, KvType type,
                 std::vector<uint16_t>* half, std::vector<uint8_t>* codes, std::vector<uint8_t>* scale) {
  half->resize(x.size());
  codes->resize(x.size());
  scale->assign(int64_t{n_head_kv} * block_size, 0);
  for (size_t i = 0; i < x.size(); ++i) (*half)[i] = type == KvType::kBf16 ? F32ToBF16(x[i]) : F32ToF16(x[i]);
  if (!KvTypeHasScales(type)) return;
  for (int h = 0; h < n_head_kv; ++h) {
    for (int s = 0; s < block_size; ++s) {
      const int64_t off = (int64_t{h} * block_size + s) * head_dim;
      StoreKvRowQuantized(x.data() + off, 1, head_dim, type, codes->data() + off,
                          scale->data() + int64_t{h} * block_size + s, 1);
    }
  }
}

PagedKv MakePagedKv(int n_pos, int n_head_kv, int head_dim, int block_size, uint32_t seed,
                    KvType type) {
  PagedKv kv;
  const int n_blocks = (n_pos + block_size - 1) / block_size;
  for (int b = 0; b < n_blocks; ++b) {
    kv.k_storage.push_back(RandomVector(int64_t{n_head_kv} * block_size * head_dim, seed + 2 * b));
    kv.v_storage.push_back(RandomVector(int64_t{n_head_kv} * block_size * head_dim, seed + 2 * b + 1));
    kv.k_half.emplace_back();
    kv.v_half.emplace_back();
    kv.k_codes.emplace_back();
    kv.v_codes.emplace_back();
    kv.k_scale.emplace_back();
    kv.v_scale.emplace_back();
    EncodeBlock(kv.k_storage.back(), n_head_kv, block_size, head_dim, type, &kv.k_half.back(), &kv.k_codes.back(),
                &kv.k_scale.back());
    EncodeBlock(kv.v_storage.back(), n_head_kv, block_size, head_dim, type, &kv.v_half.back(), &kv.v_codes.back(),
                &kv.v_scale.back());
  }
  // Blocks in reverse order of allocation, as a block table may well be.
  auto pick = [type](const std::vector<float>& f, const std::vector<uint16_t>& h,
                      const std::vector<uint8_t>& c) -> const void* {
    if (type == KvType::kF32) return f.data();
    if (type == KvType::kF16 || type == KvType::kBf16) return h.data();
    return c.data();
  };
  for (int b = n_blocks - 1; b >= 0; --b) {
    kv.k_blocks.insert(kv.k_blocks.begin(), pick(kv.k_storage[b], kv.k_half[b], kv.k_codes[b]));
    kv.v_blocks.insert(kv.v_blocks.begin(), pick(kv.v_storage[b], kv.v_half[b], kv.v_codes[b]));
    kv.k_scales.insert(kv.k_scales.begin(), kv.k_scale[b].data());
    kv.v_scales.insert(kv.v_scales.begin(), kv.v_scale[b].data());
  }
  if (KvTypeHasScales(type)) {
    kv.view.k_scales = kv.k_scales.data();
    kv.view.v_scales = kv.v_scales.data();
  }
  kv.view.type = type;
  kv.view.k_blocks = kv.k_blocks.data();
  kv.view.v_blocks = kv.v_blocks.data();
  kv.view.block_size = block_size;
  kv.view.k_pos_stride = head_dim;
  kv.view.k_head_stride = int64_t{block_size} * head_dim;
  kv.view.v_pos_stride = head_dim;
  kv.view.v_head_stride = int64_t{block_size} * head_dim;
  return kv;
}

// A batch of AttnCase's sequences: batch rows interleave the sequences
// (continuous batching); every position, the batch's own included, is read
// from the blocks.
struct AttnBatch {
  std::vector<int32_t> positions;
  std::vector<std::vector<int32_t>> rows;
  std::vector<PagedKv> kvs;
  std::vector<AttentionSeq> seqs;
};

void MakeAttnBatch(const AttnCase& c, KvType type, AttnBatch* batch) {
  const int n_seqs = static_cast<int>(c.prefix.size());
  batch->rows.assign(n_seqs, {});
  const int max_new = *std::max_element(c.n_new.begin(), c.n_new.end());
  for (int i = 0; i < max_new; ++i) {
    for (int s = 0; s < n_seqs; ++s) {
      if (i < c.n_new[s]) {
        batch->rows[s].push_back(static_cast<int32_t>(batch->positions.size()));
        batch->positions.push_back(c.prefix[s] + i);
      }
    }
  }
  for (int s = 0; s < n_seqs; ++s) {
    batch->kvs.push_back(MakePagedKv(c.prefix[s] + c.n_new[s], c.n_head_kv, c.head_dim, c.block_size,
                                     100 + s, type));
  }
  batch->seqs.assign(n_seqs, {});
  for (int s = 0; s < n_seqs; ++s) {
    AttentionSeq& seq = batch->seqs[s];
    seq.kv = batch->kvs[s].view;
    seq.rows = batch->rows[s].data();
    seq.n_rows = static_cast<int32_t>(batch->rows[s].size());
  }
}

AttentionShape AttnShape(const AttnCase& c) {
  AttentionShape sh;
  sh.n_head = c.n_head;
  sh.n_head_kv = c.n_head_kv;
  sh.head_dim_k = sh.head_dim_v = c.head_dim;
  sh.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return sh;
}

class AttentionTest : public ::testing::TestWithParam<std::tuple<AttnCase, Isa, KvType>> {};

TEST_P(AttentionTest, MatchesReference) {
  const auto& [c, isa, type] = GetParam();
  if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) GTEST_SKIP() << "ISA not available";
  const Isa saved = ActiveIsa();
  SetIsaForTesting(isa);
  const AttentionShape sh = AttnShape(c);
  const int n_seqs = static_cast<int>(c.prefix.size());
  AttnBatch batch;
  MakeAttnBatch(c, type, &batch);
  const std::vector<int32_t>& positions = batch.positions;
  const std::vector<AttentionSeq>& seqs = batch.seqs;
  const int64_t n_rows = static_cast<int64_t>(positions.size());
  const int64_t q_stride = int64_t{c.n_head} * c.head_dim;
  // Queries scaled up so that the softmax is peaked, as in trained models.
  const auto q = RandomVector(n_rows * q_stride, 9, 3.0f);
  std::vector<float> got(n_rows * q_stride, -1.0f), want(n_rows * q_stride, -2.0f);
  ThreadPool pool(2);
  Attention(sh, q.data(), q_stride, positions.data(), seqs.data(), n_seqs, got.data(), q_stride, pool);
  AttentionReference(sh, q.data(), q_stride, positions.data(), seqs.data(), n_seqs, want.data(), q_stride);
  SetIsaForTesting(saved);
  // f32 dot products and an approximate exp (2e-7) against double: 1e-5 absolute
  // on outputs that are convex combinations of N(0,1) values.
  // f16: both round q and the weights P to f16; where the kernel's f32 weight
  // and the reference's double weight straddle an f16 rounding boundary they
  // round one f16 step apart (<= 2^-10 relative), i.e. up to ~1e-3 * w * |v|
  // for that weight. That happens for a few weights per row: bound every
  // element by 2e-3 and all but 3% by 1e-5 (observed: max 1.3e-3 and 0.6% on
  // the pp512 shape, 1.3% over 4200 keys). A missing or misplaced rounding
  // moves most elements by more than 1e-5.
  // bf16 / fp8 / int8: the reference decodes the same codes and scales (in
  // double), so only f32 arithmetic differs: the f32 bound.
  const double tight = 1e-5;
  const double loose = type == KvType::kF16 ? 2e-3 : tight;
  size_t n_over = 0;
  double max_diff = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = std::abs(got[i] - want[i]);
    ASSERT_LE(diff, loose) << "element " << i;
    max_diff = std::max(max_diff, diff);
    n_over += diff > tight;
  }
  EXPECT_LE(n_over, got.size() * 3 / 100) << "max diff " << max_diff;
}

const AttnCase kAttnCases[] = {
    {32, 8, 64, {0}, {512}, 4096},        // pp512 shape: one prefill
    {32, 8, 64, {511}, {1}, 4096},        // decode at 512
    {8, 4, 8, {0}, {37}, 64},             // stories260K shape, paged
    {4, 1, 128, {100, 0, 7}, {1, 70, 3}, 16},  // mixed decode + prefill, MQA, small blocks
    {6, 2, 16, {63, 64, 65}, {2, 1, 130}, 64},  // block boundaries
    {2, 2, 20, {5}, {9}, 8},              // odd head_dim, MHA
    {16, 1, 16, {4200}, {5}, 512},        // long context: f16 tiles shrink to 3 rows
    // Decode-shaped tiles: query heads grouped by 4 / 2 / 1 in the kernel's
    // loops, depths off multiples of 16 and 64, blocks of 16 and 32 that
    // split the kernel's 64-key blocks, partial last blocks.
    {32, 8, 64, {1999}, {1}, 16},         // Llama-1B decode, paged by 16
    {32, 8, 64, {127, 64, 0}, {2, 1, 3}, 32},  // one tile per row pair: groups of 4
    {12, 4, 32, {77, 130}, {1, 3}, 32},   // ratio 3: groups of 2 and 1
    {16, 4, 128, {200}, {2}, 16},         // wide heads: pairs
    {8, 2, 96, {33, 1}, {17, 1}, 16},     // dims not a multiple of 64
    {8, 2, 256, {70}, {2}, 32},           // head_dim 256: two passes over d
    {4, 4, 8, {1000}, {1}, 16},           // head_dim below one vector
};

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Combine(::testing::ValuesIn(kAttnCases),
                                            ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                                            ::testing::Values(KvType::kF32, KvType::kF16, KvType::kBf16,
                                                              KvType::kFp8E4M3, KvType::kInt8)));

// Every fp8 / int8 code (fp8 subnormals, the largest, both signs) through the
// kernel's dequantizers on each ISA, in K and in V, all positions cached so
// the whole-block paths run, against the reference's decoding. A NaN code in
// V makes the outputs NaN.
class AttentionCodesTest : public ::testing::TestWithParam<std::tuple<Isa, KvType>> {};

TEST_P(AttentionCodesTest, EveryCodeMatchesReference) {
  const auto& [isa, type] = GetParam();
  if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) GTEST_SKIP() << "ISA not available";
  const int head_dim = 64, block_size = 16, n_pos = 45;
  const int n_blocks = (n_pos + block_size - 1) / block_size;
  std::vector<std::vector<uint8_t>> k_codes(n_blocks), v_codes(n_blocks);
  std::vector<std::vector<uint8_t>> k_scale(n_blocks), v_scale(n_blocks);
  std::vector<const void*> k_blocks, v_blocks;
  std::vector<const uint8_t*> k_scales, v_scales;
  auto code = [type](int i, int mul) {
    const int c = (i * mul) % 256;
    return static_cast<uint8_t>(type == KvType::kFp8E4M3 && (c & 0x7f) == 0x7f ? c ^ 1 : c);
  };
  for (int b = 0; b < n_blocks; ++b) {
    for (int i = 0; i < block_size * head_dim; ++i) {
      k_codes[b].push_back(code(b * block_size * head_dim + i, 37));
      v_codes[b].push_back(code(b * block_size * head_dim + i, 53));
    }
    // A scale per position, varying within and across blocks.
    for (int p = 0; p < block_size; ++p) {
      k_scale[b].push_back(static_cast<uint8_t>(127 - 6 - 2 * b - p % 3));
      v_scale[b].push_back(static_cast<uint8_t>(127 - 3 + b + p % 5));
    }
    k_blocks.push_back(k_codes[b].data());
    v_blocks.push_back(v_codes[b].data());
    k_scales.push_back(k_scale[b].data());
    v_scales.push_back(v_scale[b].data());
  }
  AttentionSeq seq;
  seq.kv.type = type;
  seq.kv.k_blocks = k_blocks.data();
  seq.kv.v_blocks = v_blocks.data();
  seq.kv.k_scales = k_scales.data();
  seq.kv.v_scales = v_scales.data();
  seq.kv.block_size = block_size;
  seq.kv.k_pos_stride = seq.kv.v_pos_stride = head_dim;
  seq.kv.k_head_stride = seq.kv.v_head_stride = int64_t{block_size} * head_dim;
  const std::vector<int32_t> rows = {0, 1}, positions = {n_pos - 1, 20};
  seq.rows = rows.data();
  seq.n_rows = 2;
  const AttentionShape sh = AttnShape({4, 1, head_dim, {}, {}, block_size});
  const int64_t q_stride = 4 * head_dim;
  const auto q = RandomVector(2 * q_stride, 31, 0.5f);
  std::vector<float> got(2 * q_stride), want(2 * q_stride);
  const Isa saved = ActiveIsa();
  SetIsaForTesting(isa);
  ThreadPool pool(1);
  Attention(sh, q.data(), q_stride, positions.data(), &seq, 1, got.data(), q_stride, pool);
  AttentionReference(sh, q.data(), q_stride, positions.data(), &seq, 1, want.data(), q_stride);
  EXPECT_LT(MaxRelError(got, want), 1e-5);
  if (type == KvType::kFp8E4M3) {
    v_codes[0][5 * head_dim + 3] = 0x7f;  // position 5, dim 3: NaN
    Attention(sh, q.data(), q_stride, positions.data(), &seq, 1, got.data(), q_stride, pool);
    for (int64_t r = 0; r < 2; ++r) EXPECT_TRUE(std::isnan(got[r * q_stride + 3])) << "row " << r;
  }
  SetIsaForTesting(saved);
}

INSTANTIATE_TEST_SUITE_P(IsasAndTypes, AttentionCodesTest,
                         ::testing::Combine(::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                                            ::testing::Values(KvType::kFp8E4M3, KvType::kInt8)));

// A sequence's outputs do not depend on what else is in the batch (how the
// kernel tiles it): the same bits alone and next to other sequences, among
// them a long one that shrinks the f16 tiles.
class AttentionBatchTest : public ::testing::TestWithParam<std::tuple<Isa, KvType>> {};

TEST_P(AttentionBatchTest, RowsIndependentOfBatch) {
  const auto& [isa, type] = GetParam();
  if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) GTEST_SKIP() << "ISA not available";
  const Isa saved = ActiveIsa();
  SetIsaForTesting(isa);
  ThreadPool pool(2);
  // Sequence 0 (decode at 300 and 70-row prefill at 100) alone, then first of a batch.
  const AttnCase alone_cases[] = {{32, 8, 64, {300}, {1}, 16}, {32, 8, 64, {100}, {70}, 32}};
  for (const AttnCase& alone : alone_cases) {
    AttnCase mixed = alone;
    mixed.prefix.insert(mixed.prefix.end(), {5000, 17, 0});
    mixed.n_new.insert(mixed.n_new.end(), {1, 40, 3});
    const AttentionShape sh = AttnShape(alone);
    const int64_t q_stride = int64_t{sh.n_head} * sh.head_dim_k;
    AttnBatch a, m;
    MakeAttnBatch(alone, type, &a);
    MakeAttnBatch(mixed, type, &m);
    const int64_t n_a = static_cast<int64_t>(a.positions.size()), n_m = static_cast<int64_t>(m.positions.size());
    const auto q_m = RandomVector(n_m * q_stride, 21, 3.0f);
    // The alone batch gets sequence 0's query rows of the mixed batch.
    std::vector<float> q_a(n_a * q_stride);
    for (int64_t r = 0; r < n_a; ++r) {
      std::copy_n(q_m.begin() + m.rows[0][r] * q_stride, q_stride, q_a.begin() + r * q_stride);
    }
    std::vector<float> out_a(n_a * q_stride), out_m(n_m * q_stride);
    Attention(sh, q_a.data(), q_stride, a.positions.data(), a.seqs.data(), 1, out_a.data(), q_stride, pool);
    Attention(sh, q_m.data(), q_stride, m.positions.data(), m.seqs.data(), static_cast<int>(m.seqs.size()),
              out_m.data(), q_stride, pool);
    for (int64_t r = 0; r < n_a; ++r) {
      for (int64_t i = 0; i < q_stride; ++i) {
        ASSERT_EQ(out_a[r * q_stride + i], out_m[m.rows[0][r] * q_stride + i]) << "row " << r << " element " << i;
      }
    }
  }
  SetIsaForTesting(saved);
}

INSTANTIATE_TEST_SUITE_P(IsasAndTypes, AttentionBatchTest,
                         ::testing::Combine(::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                                            ::testing::Values(KvType::kF32, KvType::kF16, KvType::kBf16,
                                                              KvType::kFp8E4M3, KvType::kInt8)));

// A query row gives the same bits alone (a decode tile: the kernel's
// pipelined path for f16 when all its keys are cached) as inside a tile of
// several rows of its sequence (other query groups, masked key blocks).
class AttentionTileRowsTest : public ::testing::TestWithParam<std::tuple<Isa, KvType>> {};

TEST_P(AttentionTileRowsTest, RowAloneMatchesRowInTile) {
  const auto& [isa, type] = GetParam();
  if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) GTEST_SKIP() << "ISA not available";
  const Isa saved = ActiveIsa();
  SetIsaForTesting(isa);
  ThreadPool pool(1);
  const AttnCase cases[] = {
      {32, 8, 64, {290}, {11}, 16},  // GQA 4: one group alone, 44 queries in the tile
      {8, 8, 64, {100}, {4}, 32},    // MHA: four rows at different positions in one group
      {8, 2, 96, {70}, {9}, 16},     // head_dim 96: three 32-element steps per key vector
      {4, 1, 128, {200}, {3}, 64},   // MQA, wide heads
      {8, 2, 32, {40}, {1}, 16},     // one partial key block
  };
  for (const AttnCase& c : cases) {
    const AttentionShape sh = AttnShape(c);
    const int64_t q_stride = int64_t{sh.n_head} * sh.head_dim_k;
    AttnBatch b;
    MakeAttnBatch(c, type, &b);
    const int64_t n = static_cast<int64_t>(b.positions.size());
    const auto q = RandomVector(n * q_stride, 23, 3.0f);
    std::vector<float> all(n * q_stride), one(n * q_stride);
    Attention(sh, q.data(), q_stride, b.positions.data(), b.seqs.data(), 1, all.data(), q_stride, pool);
    for (int64_t r = 0; r < n; ++r) {
      AttentionSeq seq = b.seqs[0];
      seq.rows = b.rows[0].data() + r;
      seq.n_rows = 1;
      Attention(sh, q.data(), q_stride, b.positions.data(), &seq, 1, one.data(), q_stride, pool);
      const int64_t row = b.rows[0][r];
      for (int64_t i = 0; i < q_stride; ++i) {
        ASSERT_EQ(one[row * q_stride + i], all[row * q_stride + i])
            << "head_dim " << c.head_dim << " row " << r << " element " << i;
      }
    }
  }
  SetIsaForTesting(saved);
}

INSTANTIATE_TEST_SUITE_P(IsasAndTypes, AttentionTileRowsTest,
                         ::testing::Combine(::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512),
                                            ::testing::Values(KvType::kF32, KvType::kF16, KvType::kBf16,
                                                              KvType::kFp8E4M3, KvType::kInt8)));

// ---- KV element stores -------------------------------------------------------

class StoreKvRowTest : public ::testing::TestWithParam<Isa> {};

TEST_P(StoreKvRowTest, F16MatchesScalarConversion) {
  const Isa isa = GetParam();
  if (static_cast<int>(isa) > static_cast<int>(DetectedIsa())) GTEST_SKIP() << "ISA not available";
  std::vector<float> x = RandomVector(1000, 11, 100.0f);
  // Edge cases: zeros, half subnormals and the normal boundary, ties, overflow, inf, nan.
  const float edge[] = {0.0f, -0.0f, 1e-8f, 3e-8f, 5.96e-8f, -6.0e-5f, 6.1035156e-5f,
                        6.1e-5f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65504.0f, 65519.0f,
                        65520.0f, -1e6f, INFINITY, -INFINITY, NAN, 2049.0f, 2051.0f, 0.33333334f};
  x.insert(x.begin() + 3, std::begin(edge), std::end(edge));  // also off vector alignment
  const Isa saved = ActiveIsa();
  SetIsaForTesting(isa);
  std::vector<uint16_t> got(x.size());
  StoreKvRow(x.data(), static_cast<int64_t>(x.size()), KvType::kF16, got.data());
  SetIsaForTesting(saved);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(F16ToF32(got[i]))) << i;
    } else {
      ASSERT_EQ(got[i], F32ToF16(x[i])) << "value " << x[i];
    }
  }
  std::vector<float> f32(x.size());
  StoreKvRow(x.data(), static_cast<int64_t>(x.size()), KvType::kF32, f32.data());
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isnan(x[i])) {
      ASSERT_EQ(f32[i], x[i]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, StoreKvRowTest,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvx512));

TEST(KvTypeTest, ParsesNames) {
  EXPECT_EQ(ParseKvType("f16"), KvType::kF16);
  EXPECT_EQ(ParseKvType("F32"), KvType::kF32);
  EXPECT_EQ(ParseKvType("bf16"), KvType::kBf16);
  EXPECT_EQ(ParseKvType("fp8_e4m3"), KvType::kFp8E4M3);
  EXPECT_EQ(ParseKvType("FP8"), KvType::kFp8E4M3);
  EXPECT_EQ(ParseKvType("int8"), KvType::kInt8);
  EXPECT_FALSE(ParseKvType("q8_0").has_value());
  EXPECT_FALSE(ParseKvType("fp8_e5m2").has_value());
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8}) {
    EXPECT_EQ(ParseKvType(KvTypeName(t)), t);
  }
  EXPECT_EQ(KvTypeSize(KvType::kF16), 2);
  EXPECT_EQ(KvTypeSize(KvType::kBf16), 2);
  EXPECT_EQ(KvTypeSize(KvType::kFp8E4M3), 1);
  EXPECT_EQ(KvTypeSize(KvType::kInt8), 1);
}

}  // namespace
}  // namespace pagoda::kernels
