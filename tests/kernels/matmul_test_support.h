// Helpers shared by the MatMul tests (matmul_test.cc, packed_weights_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize.h"

namespace pagoda::kernels {

// Builds a weight [n_out, n_in] of `type` from N(0,1) floats; keeps the
// quantized bytes alive in `storage`.
inline TensorView MakeWeight(DType type, int64_t n_out, int64_t n_in, uint32_t seed, std::vector<uint8_t>& storage) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(n_in);
  const int64_t rb = RowBytes(type, n_in);
  storage.assign(rb * n_out, 0);
  for (int64_t r = 0; r < n_out; ++r) {
    for (auto& v : row) v = dist(rng);
    EXPECT_TRUE(QuantizeRow(type, row.data(), storage.data() + r * rb, n_in).ok());
  }
  TensorView w;
  w.name = "w";
  w.type = type;
  w.n_dims = 2;
  w.ne = {n_in, n_out, 1, 1};
  w.data = storage.data();
  w.nbytes = static_cast<int64_t>(storage.size());
  return w;
}

// Checks got against MatMulReference within this error bound. Fast paths may round activations to Q8 (per-block step
// amax/127, so per element error <= amax_blk/254; the block is 256 elements
// for K-quant weights, 32 otherwise) and may round weights and
// activations to bf16 (relative 2^-9 each); all accumulate in f32. So
//   |y - y_ref| <= eps * sum_k |w_k| * amax_blk(x)_k  + f32 slack,
// with eps = 1/254 + 2^-8 (~0.0079) for every path. The reference dequantizes
// with the same dequantizer and accumulates in double, so weight quantization
// error itself is not part of the comparison.
// act_block: the activation block the bound assumes (0: 256 for K-quant
// weights, 32 otherwise).
inline void ExpectNearMatMulReference(const TensorView& w, const float* x, int64_t n_tokens, const float* got,
                                      const std::string& what, int64_t act_block = 0) {
  const int64_t n_in = w.ne[0], n_out = w.rows();
  const int64_t block = GetDTypeInfo(w.type).block_size;
  std::vector<float> want(n_tokens * n_out);
  MatMulReference(w, x, n_tokens, want.data());
  std::vector<float> wrow(n_in);
  const double eps = 1.0 / 254 + 1.0 / 256;
  if (act_block == 0) act_block = block == 256 ? 256 : 32;
  for (int64_t r = 0; r < n_out; ++r) {
    ASSERT_TRUE(DequantizeRow(w.type, w.row(r), wrow.data(), n_in).ok());
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * n_in;
      double bound = 0.0;
      for (int64_t k0 = 0; k0 < n_in; k0 += act_block) {
        double amax = 0.0, wsum = 0.0;
        for (int64_t k = k0; k < std::min(k0 + act_block, n_in); ++k) {
          amax = std::max(amax, std::fabs(static_cast<double>(xt[k])));
          wsum += std::fabs(wrow[k]);
        }
        bound += wsum * amax;
      }
      bound = eps * bound + 1e-4 * (1 + std::fabs(want[t * n_out + r]));
      ASSERT_NEAR(got[t * n_out + r], want[t * n_out + r], bound) << what << " token " << t << " row " << r;
    }
  }
}

inline std::vector<Isa> SupportedIsas() {
  std::vector<Isa> v = {Isa::kScalar};
  if (static_cast<int>(DetectedIsa()) >= static_cast<int>(Isa::kAvx2)) v.push_back(Isa::kAvx2);
  if (DetectedIsa() == Isa::kAvx512) v.push_back(Isa::kAvx512);
  return v;
}

class IsaGuard {
 public:
  explicit IsaGuard(Isa isa) : saved_(ActiveIsa()) { SetIsaForTesting(isa); }
  ~IsaGuard() { SetIsaForTesting(saved_); }

 private:
  Isa saved_;
};

class BatchPathGuard {
 public:
  explicit BatchPathGuard(BatchPath path) : saved_(ActiveBatchPath()) { SetBatchPathForTesting(path); }
  ~BatchPathGuard() { SetBatchPathForTesting(saved_); }

 private:
  BatchPath saved_;
};

}  // namespace pagoda::kernels
