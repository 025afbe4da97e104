// TensorView: a non-owning view of a weight tensor (usually inside the GGUF
// mmap, which must outlive it). Dimension order follows GGML: ne[0] is the
// contiguous dimension; a 2-D weight [ne1 rows, ne0 cols] stores row r at
// data + r * RowBytes(type, ne[0]).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "tensor/dtype.h"

namespace pagoda {

struct TensorView {
  std::string name;
  DType type = DType::kF32;
  int n_dims = 0;
  std::array<int64_t, 4> ne = {1, 1, 1, 1};
  const void* data = nullptr;
  int64_t nbytes = 0;
  // Optional copy of the same matrix repacked for the active ISA's batched
  // kernels (kernels/cpu/packed_weights.h); MatMul reads it when it can.
  const void* packed = nullptr;
  // The kernels ISA (kernels::Isa as an int) whose layout `packed` holds: a
  // copy packed for one ISA is never read by another's kernels.
  int packed_isa = 0;

  int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
  int64_t row_bytes() const { return RowBytes(type, ne[0]); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
};

}  // namespace pagoda
