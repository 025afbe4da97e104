#include "kernels/cpu/packed_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize.h"
#include "kernels/matmul_test_support.h"

namespace pagoda::kernels {
namespace {

// Each packed layout gives bitwise the results of the per-call int8 panel on
// the checkpoint's rows (same activation rounding, same integer block sums,
// same f32 order), for every token count and for row counts that are not
// whole groups or chunks; and matches the scalar reference. AVX-512 VNNI
// packs Q4_0, Q4_K and Q6_K (16-row groups), AVX2 Q4_0, Q4_1, Q8_0 and Q4_K (8-row groups); each
// ISA level the machine has is run.
TEST(PackedWeightsTest, MatchesPanelBitwiseAndReference) {
  ThreadPool pool(2);
  const Isa top = ActiveIsa();
  int runs = 0;
  for (const Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(top)) continue;
    SetIsaForTesting(isa);
    for (const DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
      for (const int64_t n_in : {32, 96, 256, 2048}) {
        if (n_in % GetDTypeInfo(type).block_size != 0) continue;
        for (const int64_t n_out : {1, 7, 16, 40, 64, 100, 130}) {
          std::vector<uint8_t> storage;
          const TensorView w = MakeWeight(type, n_out, n_in, static_cast<uint32_t>(n_in * 7 + n_out), storage);
          PackedWeightStore store(pool);
          auto packed = store.Add(w);
          ASSERT_TRUE(packed.ok()) << packed.status().ToString();
          if (!CanPackWeight(w)) {
            EXPECT_EQ(packed->packed, nullptr);
            continue;
          }
          ASSERT_NE(packed->packed, nullptr);
          ++runs;
          EXPECT_EQ(store.n_tensors(), 1);
          EXPECT_GE(store.bytes(), w.nbytes);
          for (const int64_t n_tokens : {1, 2, 3, 4, 5, 8, 13, 16, 31, 32, 64, 67}) {
            std::mt19937 rng(static_cast<uint32_t>(n_tokens));
            std::normal_distribution<float> dist(0.0f, 1.0f);
            std::vector<float> x(n_tokens * n_in);
            for (auto& v : x) v = dist(rng);
            std::vector<float> got(n_tokens * n_out, NAN), panel(n_tokens * n_out, NAN), ref(n_tokens * n_out);
            {
              BatchPathGuard guard(BatchPath::kPanel);
              MatMul(*packed, x.data(), n_tokens, got.data(), pool);
              MatMul(w, x.data(), n_tokens, panel.data(), pool);
            }
            const std::string what = std::string(IsaName(isa)) + " " + DTypeName(type) + " n_in " +
                                     std::to_string(n_in) + " n_out " + std::to_string(n_out) + " n_tokens " +
                                     std::to_string(n_tokens);
            ASSERT_EQ(0, std::memcmp(got.data(), panel.data(), got.size() * sizeof(float))) << what;
            MatMulReference(w, x.data(), n_tokens, ref.data());
            for (size_t i = 0; i < ref.size(); ++i) {
              // Q8 activations: per element error <= amax/254; loose bound here,
              // the panel's tight bound is checked in matmul_test.cc.
              ASSERT_NEAR(got[i], ref[i], 0.05 * std::sqrt(static_cast<double>(n_in)) + 1e-3) << what << " at " << i;
            }
            // The automatic path reads the packed copy at every token count
            // and agrees with the forced panel.
            std::vector<float> autop(n_tokens * n_out, NAN);
            MatMul(*packed, x.data(), n_tokens, autop.data(), pool);
            ASSERT_EQ(0, std::memcmp(autop.data(), panel.data(), got.size() * sizeof(float))) << what << " (auto)";
          }
        }
      }
    }
  }
  SetIsaForTesting(top);
  if (runs == 0) GTEST_SKIP() << "no packed layout on this CPU (" << IsaName(top) << ")";
}

// A second view of the same tensor (the LM head tied to token_embd) shares
// the packed copy; other ISAs and types are not packed, and MatMul ignores a
// packed copy the active ISA cannot read.
TEST(PackedWeightsTest, SharesCopiesAndSkipsWhatItCannotPack) {
  ThreadPool pool(2);
  std::vector<uint8_t> storage;
  const TensorView w = MakeWeight(DType::kQ4_0, 48, 64, 3, storage);
  PackedWeightStore store(pool);
  auto a = store.Add(w);
  auto b = store.Add(w);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->packed, b->packed);
  EXPECT_LE(store.n_tensors(), 1);

  TensorView f32 = w;
  f32.type = DType::kF32;
  f32.ne = {16, 4, 1, 1};
  auto c = store.Add(f32);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->packed, nullptr);

  if (ActiveIsa() == Isa::kAvx512) {
    ASSERT_NE(a->packed, nullptr);
    EXPECT_TRUE(CanPackWeight(w));
    // Forced down to AVX2 the AVX-512 copy is ignored (AVX2 has a layout of
    // its own): results are the AVX2 plan's. And an AVX2 copy is ignored by
    // the AVX-512 kernels.
    std::vector<float> x(3 * 64, 0.5f), y1(3 * 48), y2(3 * 48);
    SetIsaForTesting(Isa::kAvx2);
    MatMul(*a, x.data(), 3, y1.data(), pool);
    MatMul(w, x.data(), 3, y2.data(), pool);
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)));
    PackedWeightStore avx2_store(pool);
    auto d = avx2_store.Add(w);
    ASSERT_TRUE(d.ok());
    ASSERT_NE(d->packed, nullptr);
    SetIsaForTesting(Isa::kAvx512);
    MatMul(*d, x.data(), 3, y1.data(), pool);
    MatMul(w, x.data(), 3, y2.data(), pool);
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace pagoda::kernels
