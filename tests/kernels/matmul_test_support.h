// Helpers shared by the MatMul tests (matmul_test.cc, packed_weights_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
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
