// Every Backend op but attention (backend_attention_test.cc) on each backend
// against the scalar references of kernels/cpu, on fresh random inputs,
// poisoned outputs and edge sizes (one token, partial tiles, odd widths).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/backend_test_support.h"
#include "kernels/cpu/kv_integrity.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/topk.h"
#include "kernels/matmul_test_support.h"

namespace pagoda::kernels {
namespace {

// ---- MatMul --------------------------------------------------------------------
using MatMulParam = std::tuple<const char*, DType, int64_t /*n_tokens*/, int64_t /*n_in*/>;
class BackendMatMulTest : public BackendTestBase<MatMulParam> {};

// The bound of MatMulTest (matmul_test_support.h): the CPU backend may round
// activations to Q8; the CUDA kernels dequantize to f32 and stay far inside it.
TEST_P(BackendMatMulTest, MatchesReference) {
  const auto [device, type, n_tokens, n_in] = GetParam();
  if (!backend().SupportsMatMul(type)) GTEST_SKIP() << DTypeName(type) << " not supported on " << device;
  constexpr int64_t kOut = 37;  // not a multiple of the rows per thread block
  std::vector<uint8_t> storage;
  const TensorView w = MakeWeight(type, kOut, n_in, 99 + static_cast<uint32_t>(n_tokens), storage);
  const std::vector<float> x = RandomFloats(n_tokens * n_in, 5 + static_cast<uint32_t>(n_in));
  DeviceBuffer dw = Upload(storage);
  DeviceBuffer dx = Upload(x);
  DeviceBuffer dy = PoisonedFloats(n_tokens * kOut);
  const DeviceMatrix m{type, n_in, kOut, dw.data()};
  ASSERT_TRUE(backend().MatMul(stream(), m, dx.as<float>(), n_tokens, dy.as<float>()).ok());
  const std::vector<float> got = Download<float>(dy, n_tokens * kOut);
  ExpectNearMatMulReference(w, x.data(), n_tokens, got.data(), std::string(device) + " " + DTypeName(type));
}

std::vector<MatMulParam> MatMulCases() {
  std::vector<MatMulParam> v;
  const DType kTypes[] = {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K,
                          DType::kF16,  DType::kBF16, DType::kF32};
  for (const char* d : kBackendNames) {
    for (DType t : kTypes) {
      const bool k_quant = GetDTypeInfo(t).block_size == 256;
      const bool dense = GetDTypeInfo(t).block_size == 1;
      // Three super-blocks, or an odd number of 32-blocks; dense types also
      // at a width that takes the element-wise path.
      std::vector<int64_t> widths = {k_quant ? 768 : 224};
      if (dense) widths.push_back(229);
      for (int64_t n_in : widths) {
        for (int64_t n_tokens : {1, 3, 8, 17}) v.emplace_back(d, t, n_tokens, n_in);
      }
    }
  }
  return v;
}

std::string MatMulName(const ::testing::TestParamInfo<MatMulParam>& info) {
  const auto [d, t, n, k] = info.param;
  return std::string(d) + "_" + DTypeName(t) + "_t" + std::to_string(n) + "_k" + std::to_string(k);
}

INSTANTIATE_TEST_SUITE_P(All, BackendMatMulTest, ::testing::ValuesIn(MatMulCases()), MatMulName);

// ---- element-wise ops ----------------------------------------------------------
class BackendOpsTest : public BackendTestBase<const char*> {};

TEST_P(BackendOpsTest, RmsNormMatchesReference) {
  for (int64_t n : {1, 7, 4096 + 3}) {
    for (bool with_weight : {false, true}) {
      constexpr int64_t kRows = 3;
      const std::vector<float> x = RandomFloats(kRows * n, 11 + static_cast<uint32_t>(n), 3.0f);
      const std::vector<float> w = RandomFloats(n, 12);
      std::vector<float> want(kRows * n);
      RmsNormReference(x.data(), with_weight ? w.data() : nullptr, 1e-5f, kRows, n, want.data());
      DeviceBuffer dx = Upload(x), dw = Upload(w), dy = PoisonedFloats(kRows * n);
      ASSERT_TRUE(backend()
                      .RmsNorm(stream(), dx.as<float>(), with_weight ? dw.as<float>() : nullptr, 1e-5f, kRows, n,
                               dy.as<float>())
                      .ok());
      ExpectAllNear(Download<float>(dy, kRows * n), want, 1e-5, "rms_norm n=" + std::to_string(n));
    }
  }
}

// Every variant the CPU has differs only in inv_freq: plain, linear scaling
// with Llama-3 frequency factors, YaRN; adjacent pairs and NeoX; partial
// rotation (n_rot < head_dim); odd head counts; positions up to 1e5.
TEST_P(BackendOpsTest, RopeMatchesReference) {
  constexpr int kHeads = 3, kHeadDim = 64;
  constexpr int64_t kTokens = 5, kStride = kHeads * kHeadDim + 4;
  const std::vector<int32_t> pos = {0, 1, 17, 4095, 100000};
  for (int n_rot : {64, 32}) {
    for (bool neox : {false, true}) {
      for (int variant = 0; variant < 3; ++variant) {
        const int n_half = n_rot / 2;
        std::vector<float> factors(n_half);
        for (int i = 0; i < n_half; ++i) factors[i] = 1.0f + 0.25f * static_cast<float>(i % 5);
        std::vector<double> inv_freq(n_half);
        if (variant == 2) {
          RopeYarnInvFreq(10000.0, n_rot, 0.25, 4096, 32.0, 1.0, inv_freq.data());
        } else {
          RopeInvFreq(500000.0, n_rot, variant == 1 ? 0.5 : 1.0, variant == 1 ? factors.data() : nullptr,
                      inv_freq.data());
        }
        const std::vector<float> x = RandomFloats(kTokens * kStride, 21 + variant);
        // The reference recomputes the angles from the same inv_freq via the CPU tables.
        std::vector<float> cos_h(kTokens * n_half), sin_h(kTokens * n_half);
        RopeTables(inv_freq.data(), n_half, pos.data(), kTokens, cos_h.data(), sin_h.data());
        std::vector<float> want = x;
        Rope(want.data(), kTokens, kStride, kHeads, kHeadDim, n_rot, neox, cos_h.data(), sin_h.data());

        DeviceBuffer df = Upload(inv_freq), dp = Upload(pos), dx = Upload(x);
        DeviceBuffer dc = PoisonedFloats(kTokens * n_half), ds = PoisonedFloats(kTokens * n_half);
        ASSERT_TRUE(backend()
                        .RopeTables(stream(), df.as<double>(), n_half, dp.as<int32_t>(), kTokens, dc.as<float>(),
                                    ds.as<float>())
                        .ok());
        ExpectAllNear(Download<float>(dc, cos_h.size()), cos_h, 1e-6, "rope cos");
        ExpectAllNear(Download<float>(ds, sin_h.size()), sin_h, 1e-6, "rope sin");
        ASSERT_TRUE(backend()
                        .Rope(stream(), dx.as<float>(), kTokens, kStride, kHeads, kHeadDim, n_rot, neox,
                              dc.as<float>(), ds.as<float>())
                        .ok());
        ExpectAllNear(Download<float>(dx, x.size()), want, 1e-5,
                      "rope n_rot=" + std::to_string(n_rot) + " neox=" + std::to_string(neox) + " variant " +
                          std::to_string(variant));
      }
    }
  }
}

TEST_P(BackendOpsTest, RopeTablesMatchTheAngleReference) {
  // RopeReference computes the angle itself: the tables must reproduce it.
  constexpr int kHeads = 1, kHeadDim = 8, kRot = 8;
  const std::vector<int32_t> pos = {3, 99999};
  std::vector<double> inv_freq(kRot / 2);
  RopeInvFreq(10000.0, kRot, 1.0, nullptr, inv_freq.data());
  const std::vector<float> x = RandomFloats(2 * kHeadDim, 3);
  std::vector<float> want = x;
  RopeReference(want.data(), 2, kHeadDim, kHeads, kHeadDim, kRot, false, pos.data(), 10000.0, 1.0, nullptr);
  DeviceBuffer df = Upload(inv_freq), dp = Upload(pos), dx = Upload(x);
  DeviceBuffer dc = PoisonedFloats(2 * kRot / 2), ds = PoisonedFloats(2 * kRot / 2);
  ASSERT_TRUE(backend().RopeTables(stream(), df.as<double>(), kRot / 2, dp.as<int32_t>(), 2, dc.as<float>(),
                                   ds.as<float>()).ok());
  ASSERT_TRUE(backend().Rope(stream(), dx.as<float>(), 2, kHeadDim, kHeads, kHeadDim, kRot, false, dc.as<float>(),
                             ds.as<float>()).ok());
  ExpectAllNear(Download<float>(dx, x.size()), want, 1e-5, "rope vs angle reference");
}

TEST_P(BackendOpsTest, SoftmaxMatchesReference) {
  for (int64_t n : {1, 5, 128256}) {
    constexpr int64_t kRows = 2;
    std::vector<float> x = RandomFloats(kRows * n, 31 + static_cast<uint32_t>(n), 4.0f);
    std::vector<float> want = x;
    for (int64_t r = 0; r < kRows; ++r) SoftmaxReference(want.data() + r * n, n);
    DeviceBuffer dx = Upload(x);
    ASSERT_TRUE(backend().Softmax(stream(), dx.as<float>(), kRows, n).ok());
    ExpectAllNear(Download<float>(dx, x.size()), want, 1e-5, "softmax n=" + std::to_string(n));
  }
}

TEST_P(BackendOpsTest, SiluMulAndAddMatchReference) {
  constexpr int64_t kN = 1001;
  const std::vector<float> g = RandomFloats(kN, 41, 4.0f), u = RandomFloats(kN, 42);
  std::vector<float> want(kN), sum(kN);
  SiluMulReference(g.data(), u.data(), kN, want.data());
  for (int64_t i = 0; i < kN; ++i) sum[i] = g[i] + u[i];
  DeviceBuffer dg = Upload(g), du = Upload(u), dy = PoisonedFloats(kN), ds = PoisonedFloats(kN);
  ASSERT_TRUE(backend().SiluMul(stream(), dg.as<float>(), du.as<float>(), kN, dy.as<float>()).ok());
  ASSERT_TRUE(backend().Add(stream(), dg.as<float>(), du.as<float>(), kN, ds.as<float>()).ok());
  ExpectAllNear(Download<float>(dy, kN), want, 1e-5, "silu_mul");
  ExpectAllNear(Download<float>(ds, kN), sum, 0.0, "add");
}

// ---- top-k ---------------------------------------------------------------------
TEST_P(BackendOpsTest, TopKMatchesScalarOrderWithTiesAndNaN) {
  for (int64_t n_vocab : {1, 7, 128256}) {
    for (int k : {1, 5, kMaxTopK}) {
      constexpr int64_t kRows = 3;
      std::vector<float> x = RandomFloats(kRows * n_vocab, 51 + static_cast<uint32_t>(n_vocab + k));
      for (int64_t i = 0; i < kRows * n_vocab; i += 13) x[i] = 2.5f;  // ties
      for (int64_t i = 5; i < kRows * n_vocab; i += 29) x[i] = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> want_v(kRows * k);
      std::vector<int32_t> want_i(kRows * k);
      TopK(x.data(), kRows, n_vocab, k, want_v.data(), want_i.data());
      DeviceBuffer dx = Upload(x), dv = PoisonedFloats(kRows * k), di = Upload(std::vector<int32_t>(kRows * k, -7));
      ASSERT_TRUE(backend().TopK(stream(), dx.as<float>(), kRows, n_vocab, k, dv.as<float>(), di.as<int32_t>()).ok());
      const std::vector<float> got_v = Download<float>(dv, kRows * k);
      const std::vector<int32_t> got_i = Download<int32_t>(di, kRows * k);
      for (int64_t i = 0; i < kRows * k; ++i) {
        ASSERT_EQ(got_i[i], want_i[i]) << "n_vocab " << n_vocab << " k " << k << " slot " << i;
        ASSERT_EQ(got_v[i], want_v[i]) << "n_vocab " << n_vocab << " k " << k << " slot " << i;
      }
    }
  }
}

// ---- KV integrity ----------------------------------------------------------------
TEST_P(BackendOpsTest, KvIntegrityCheckMatchesScalarRule) {
  constexpr int32_t kBlocks = 50, kSeqs = 7;
  std::mt19937 rng(61);
  std::vector<uint32_t> tags(kBlocks);
  std::vector<int32_t> refs(kBlocks);
  for (int32_t b = 0; b < kBlocks; ++b) {
    tags[b] = rng();
    refs[b] = 1 + b % 2;
  }
  std::vector<int32_t> rec_off = {0}, live_off = {0}, rec_ids, live_ids;
  std::vector<uint32_t> rec_tags;
  for (int32_t s = 0; s < kSeqs; ++s) {
    const int32_t n = s == 0 ? 0 : 1 + static_cast<int32_t>(rng() % 45);  // one empty sequence; some > 32 entries
    for (int32_t i = 0; i < n; ++i) {
      const int32_t b = static_cast<int32_t>(rng() % (kBlocks - 1));  // kBlocks - 1: sequence 6's
      rec_ids.push_back(b);
      rec_tags.push_back(tags[b]);
      live_ids.push_back(b);
    }
    const int32_t last = static_cast<int32_t>(live_ids.size()) - 1;
    switch (s) {
      case 2: live_ids[last] = (live_ids[last] + 1) % (kBlocks - 1); break;  // swapped
      case 3: rec_tags[last] ^= 1; break;                               // retagged
      case 4: live_ids[last] = kBlocks + 3; break;                      // out of range
      case 5: live_ids.push_back(0); break;                             // length changed
      case 6:  // its last block was freed (ref count 0)
        rec_ids[last] = live_ids[last] = kBlocks - 1;
        rec_tags[last] = tags[kBlocks - 1];
        refs[kBlocks - 1] = 0;
        break;
      default: break;
    }
    rec_off.push_back(static_cast<int32_t>(rec_ids.size()));
    live_off.push_back(static_cast<int32_t>(live_ids.size()));
  }
  KvIntegrityBatch h{kSeqs, rec_off.data(), rec_ids.data(), rec_tags.data(), live_off.data(), live_ids.data(),
                     tags.data(), refs.data(), kBlocks};
  std::vector<int32_t> want(kSeqs);
  KvIntegrityCheck(h, want.data());
  EXPECT_EQ(want[0], kKvIntact);
  EXPECT_EQ(want[1], kKvIntact);
  EXPECT_EQ(want[5], kKvLengthChanged);
  for (int s : {2, 3, 4, 6}) EXPECT_GE(want[s], 0) << "sequence " << s;

  DeviceBuffer d_ro = Upload(rec_off), d_ri = Upload(rec_ids), d_rt = Upload(rec_tags), d_lo = Upload(live_off),
               d_li = Upload(live_ids), d_t = Upload(tags), d_r = Upload(refs),
               d_out = Upload(std::vector<int32_t>(kSeqs, 12345));
  KvIntegrityBatch d{kSeqs, d_ro.as<int32_t>(), d_ri.as<int32_t>(), d_rt.as<uint32_t>(), d_lo.as<int32_t>(),
                     d_li.as<int32_t>(), d_t.as<uint32_t>(), d_r.as<int32_t>(), kBlocks};
  ASSERT_TRUE(backend().KvIntegrityCheck(stream(), d, d_out.as<int32_t>()).ok());
  EXPECT_EQ(Download<int32_t>(d_out, kSeqs), want);
}

INSTANTIATE_TEST_SUITE_P(All, BackendOpsTest, ::testing::ValuesIn(kBackendNames), BackendParamName);

}  // namespace
}  // namespace pagoda::kernels
