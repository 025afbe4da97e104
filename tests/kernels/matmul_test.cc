#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/quantize.h"
#include "kernels/matmul_test_support.h"

namespace pagoda::kernels {
namespace {

const BatchPath kAllPaths[] = {BatchPath::kAuto, BatchPath::kLegacy, BatchPath::kGemv, BatchPath::kPanel,
                               BatchPath::kGemm};

using MatMulParam = std::tuple<DType, Isa, int64_t /*n_tokens*/, int64_t /*n_out*/>;

class MatMulTest : public ::testing::TestWithParam<MatMulParam> {};

TEST_P(MatMulTest, MatchesReference) {
  const auto [type, isa, n_tokens, n_out] = GetParam();
  const int64_t block = GetDTypeInfo(type).block_size;
  // Odd number of 32-blocks (tails of paired loops), or 3 super-blocks for K types.
  const int64_t n_in = block == 256 ? 768 : 224;
  std::vector<uint8_t> storage;
  const TensorView w = MakeWeight(type, n_out, n_in, 1234, storage);
  ASSERT_TRUE(CheckMatMulWeight(w).ok());

  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n_tokens * n_in);
  for (auto& v : x) v = dist(rng);
  std::vector<float> got(n_tokens * n_out, NAN);
  ThreadPool pool(2);
  {
    IsaGuard guard(isa);
    MatMul(w, x.data(), n_tokens, got.data(), pool);
  }
  ExpectNearMatMulReference(w, x.data(), n_tokens, got.data(), std::string(DTypeName(type)) + " " + IsaName(isa));
}

std::string ParamName(const ::testing::TestParamInfo<MatMulParam>& info) {
  const auto [type, isa, n_tokens, n_out] = info.param;
  return std::string(DTypeName(type)) + "_" + IsaName(isa) + "_t" + std::to_string(n_tokens) + "_r" +
         std::to_string(n_out);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, MatMulTest,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                                         DType::kQ4_1, DType::kQ5_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K),
                       ::testing::ValuesIn(SupportedIsas()),
                       ::testing::Values<int64_t>(1, 2, 3, 5, 8, 13, 16, 31, 64, 67),
                       ::testing::Values<int64_t>(1, 7, 37)),
    ParamName);

// Every kernel family for quantized weights (BatchPath), forced for every
// batch size: the int8 GEMV tiles, the int8 panel (16-row groups, 2-group x
// 4-token register tile, 64-row chunks) and the dequantizing GEMM. Row counts
// leave partial 16-row groups and partial chunks (37 = 2 groups + 5 rows;
// 100 = one 64-row chunk + 36), token counts partial token tiles. Same error
// bound as MatMulTest (the panel rounds activations per 32-block, inside the
// bound's per-256 allowance for K-quants).
using BatchPathParam = std::tuple<DType, Isa, BatchPath, int64_t /*n_tokens*/, int64_t /*n_out*/>;

class MatMulBatchPathTest : public ::testing::TestWithParam<BatchPathParam> {};

TEST_P(MatMulBatchPathTest, MatchesReference) {
  const auto [type, isa, path, n_tokens, n_out] = GetParam();
  const int64_t n_in = GetDTypeInfo(type).block_size == 256 ? 768 : 224;
  std::vector<uint8_t> storage;
  const TensorView w = MakeWeight(type, n_out, n_in, 4321, storage);
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n_tokens * n_in);
  for (auto& v : x) v = dist(rng);
  // A few large activations: blocks with very different scales.
  for (int64_t i = 0; i < n_tokens * n_in; i += 97) x[i] *= 30.0f;
  std::vector<float> got(n_tokens * n_out, NAN);
  ThreadPool pool(2);
  {
    IsaGuard isa_guard(isa);
    BatchPathGuard path_guard(path);
    MatMul(w, x.data(), n_tokens, got.data(), pool);
  }
  ExpectNearMatMulReference(w, x.data(), n_tokens, got.data(),
                      std::string(DTypeName(type)) + " " + IsaName(isa) + " " + BatchPathName(path));
}

std::vector<Isa> SimdIsas() {
  std::vector<Isa> v;
  for (Isa isa : SupportedIsas()) {
    if (isa != Isa::kScalar) v.push_back(isa);
  }
  return v;
}

std::string BatchPathParamName(const ::testing::TestParamInfo<BatchPathParam>& info) {
  const auto [type, isa, path, n_tokens, n_out] = info.param;
  return std::string(DTypeName(type)) + "_" + IsaName(isa) + "_" + BatchPathName(path) + "_t" +
         std::to_string(n_tokens) + "_r" + std::to_string(n_out);
}

INSTANTIATE_TEST_SUITE_P(
    QuantTypes, MatMulBatchPathTest,
    ::testing::Combine(::testing::Values(DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ4_K,
                                         DType::kQ5_K, DType::kQ6_K),
                       ::testing::ValuesIn(SimdIsas()),
                       ::testing::Values(BatchPath::kGemv, BatchPath::kPanel, BatchPath::kGemm),
                       ::testing::Values<int64_t>(1, 2, 3, 5, 8, 13, 16, 31, 64),
                       ::testing::Values<int64_t>(37, 100)),
    BatchPathParamName);

TEST(MatMulBatchPathNamesTest, RoundTrip) {
  for (BatchPath p : kAllPaths) {
    const auto parsed = ParseBatchPath(BatchPathName(p));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_FALSE(ParseBatchPath("fast").has_value());
}

// Weights placed so that their last byte is the last readable byte before a
// PROT_NONE page (and their first byte follows one): every path must stay
// inside the tensor (wide loads are used only where the row has 64 bytes
// left), for row lengths from one block up, decode and prefill.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    body_ = (bytes + page_ - 1) / page_ * page_;
    size_ = body_ + 2 * page_;
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    PAGODA_CHECK(p != MAP_FAILED) << "mmap";
    base_ = static_cast<uint8_t*>(p);
    PAGODA_CHECK(mprotect(base_, page_, PROT_NONE) == 0 && mprotect(base_ + page_ + body_, page_, PROT_NONE) == 0);
    data_ = base_ + page_ + body_ - bytes;
  }
  ~GuardedBuffer() { munmap(base_, size_); }
  uint8_t* data() const { return data_; }

 private:
  size_t page_ = 0, body_ = 0, size_ = 0;
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
};

TEST(MatMulBoundsTest, ReadsOnlyTheWeightBytes) {
  const DType types[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                         DType::kQ4_1, DType::kQ5_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};
  ThreadPool pool(2);
  for (DType type : types) {
    const bool k_quant = GetDTypeInfo(type).block_size == 256;
    const std::vector<int64_t> widths = k_quant ? std::vector<int64_t>{256, 512}
                                                : std::vector<int64_t>{32, 64, 96, 128, 160, 192, 2080};
    // 5 rows: a partial row group; 16: whole groups (AVX2 8, AVX-512 16 rows)
    // whose last block ends at the guard page.
    for (int64_t n_in : widths) {
      for (const int64_t n_out : {int64_t{5}, int64_t{16}}) {
        std::vector<uint8_t> storage;
        TensorView w = MakeWeight(type, n_out, n_in, 99, storage);
        GuardedBuffer guarded(storage.size());
        std::memcpy(guarded.data(), storage.data(), storage.size());
        w.data = guarded.data();
        for (int64_t n_tokens : {1, 2, 9, 17}) {
          std::mt19937 rng(5);
          std::normal_distribution<float> dist(0.0f, 1.0f);
          std::vector<float> x(n_tokens * n_in);
          for (auto& v : x) v = dist(rng);
          for (Isa isa : SupportedIsas()) {
            for (BatchPath path : kAllPaths) {
              IsaGuard guard(isa);
              BatchPathGuard path_guard(path);
              std::vector<float> got(n_tokens * n_out, NAN);
              MatMul(w, x.data(), n_tokens, got.data(), pool);
              ExpectNearMatMulReference(w, x.data(), n_tokens, got.data(),
                                  std::string(DTypeName(type)) + " " + IsaName(isa) + " " + BatchPathName(path) +
                                      " n_in " + std::to_string(n_in) + " n_out " + std::to_string(n_out));
            }
          }
        }
      }
    }
  }
}

// Q/K/V-like weights of mixed types sharing one input: same values as one
// MatMul per weight, on every ISA, for decode and prefill batches.
TEST(MatMulSharedTest, MatchesSeparateMatMuls) {
  const int64_t n_in = 512;
  const DType types[] = {DType::kQ4_K, DType::kQ6_K, DType::kQ4_0, DType::kQ4_K};
  const int64_t rows[] = {40, 24, 33, 8};
  std::vector<uint8_t> storage[4];
  TensorView ws[4];
  for (int i = 0; i < 4; ++i) ws[i] = MakeWeight(types[i], rows[i], n_in, 100 + i, storage[i]);
  ThreadPool pool(2);
  for (Isa isa : SupportedIsas()) {
    IsaGuard guard(isa);
    for (int64_t n_tokens : {1, 5, 16, 33}) {
      std::mt19937 rng(3);
      std::normal_distribution<float> dist(0.0f, 1.0f);
      std::vector<float> x(n_tokens * n_in);
      for (auto& v : x) v = dist(rng);
      std::vector<float> want[4], got[4];
      MatMulTarget targets[4];
      for (int i = 0; i < 4; ++i) {
        want[i].assign(n_tokens * rows[i], 0.0f);
        got[i].assign(n_tokens * rows[i], NAN);
        MatMul(ws[i], x.data(), n_tokens, want[i].data(), pool);
        targets[i] = {&ws[i], got[i].data()};
      }
      MatMulShared(targets, x.data(), n_tokens, pool);
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(got[i], want[i]) << IsaName(isa) << " weight " << i << " tokens " << n_tokens;
      }
    }
  }
}

// Experts of an MoE step: weights of mixed types and widths, each on its own
// rows (some shared, one empty), in one call: the same values as one MatMul
// per weight, and those match the scalar reference, on every ISA.
TEST(MatMulGroupedTest, MatchesSeparateMatMuls) {
  const DType types[] = {DType::kQ4_0, DType::kQ4_K, DType::kQ8_0, DType::kQ6_K, DType::kF16, DType::kQ4_0};
  const int64_t n_in[] = {256, 256, 512, 256, 256, 256};
  const int64_t rows[] = {24, 40, 16, 33, 8, 24};
  const int64_t tokens[] = {1, 17, 3, 0, 5, 1};  // target 5 reads target 0's rows
  std::vector<uint8_t> storage[6];
  TensorView ws[6];
  for (int i = 0; i < 6; ++i) ws[i] = MakeWeight(types[i], rows[i], n_in[i], 200 + i, storage[i]);
  ThreadPool pool(2);
  for (Isa isa : SupportedIsas()) {
    IsaGuard guard(isa);
    std::vector<float> x[6], want[6], got[6];
    MatMulGroupTarget targets[6];
    for (int i = 0; i < 6; ++i) {
      std::mt19937 rng(7 + i);
      std::normal_distribution<float> dist(0.0f, 1.0f);
      x[i].resize(std::max<int64_t>(tokens[i], 1) * n_in[i]);
      for (auto& v : x[i]) v = dist(rng);
      if (i == 5) x[i] = x[0];
      want[i].assign(tokens[i] * rows[i], 0.0f);
      got[i].assign(tokens[i] * rows[i], NAN);
      if (tokens[i] > 0) MatMul(ws[i], x[i].data(), tokens[i], want[i].data(), pool);
      targets[i] = {&ws[i], i == 5 ? x[0].data() : x[i].data(), tokens[i], got[i].data()};
    }
    MatMulGrouped(targets, pool);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(got[i], want[i]) << IsaName(isa) << " weight " << i;
      if (tokens[i] > 0) {
        ExpectNearMatMulReference(ws[i], x[i].data(), tokens[i], got[i].data(),
                            std::string(IsaName(isa)) + " grouped weight " + std::to_string(i));
      }
    }
  }
}

TEST(MatMulCheckTest, RejectsUnsupportedTypeAndPartialBlocks) {
  TensorView w;
  w.name = "w";
  w.type = DType::kQ4_0;
  w.ne = {48, 4, 1, 1};
  static uint8_t buf[4096];
  w.data = buf;
  EXPECT_FALSE(CheckMatMulWeight(w).ok());
  w.ne = {64, 4, 1, 1};
  EXPECT_TRUE(CheckMatMulWeight(w).ok());
  w.type = DType::kQ8_K;
  w.ne = {256, 4, 1, 1};
  EXPECT_FALSE(CheckMatMulWeight(w).ok());
  w.type = DType::kQ2_K;
  EXPECT_FALSE(CheckMatMulWeight(w).ok());
}

TEST(MatMulIsaTest, NamesAndForcing) {
  EXPECT_STREQ(IsaName(Isa::kScalar), "scalar");
  IsaGuard g(Isa::kScalar);
  EXPECT_EQ(ActiveIsa(), Isa::kScalar);
}

}  // namespace
}  // namespace pagoda::kernels
