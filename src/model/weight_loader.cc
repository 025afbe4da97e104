#include "model/weight_loader.h"

#include <algorithm>
#include <array>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quantize.h"

namespace pagoda {
namespace {

std::string ShapeString(const std::array<int64_t, 4>& ne, int n_dims) {
  std::string s = "[";
  for (int i = 0; i < std::max(n_dims, 1); ++i) {
    if (i) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

}  // namespace

std::string WeightLoader::LayerName(int layer, const char* suffix) {
  return "blk." + std::to_string(layer) + "." + suffix;
}

Result<TensorView> WeightLoader::Shaped(const std::string& name, int64_t ne0, int64_t ne1,
                                        int64_t ne2) const {
  PAGODA_ASSIGN_OR_RETURN(TensorView t, file_.GetTensor(name));
  if (t.ne[0] != ne0 || t.ne[1] != ne1 || t.ne[2] != ne2 || t.ne[3] != 1) {
    std::array<int64_t, 4> want = {ne0, ne1, ne2, 1};
    return InvalidArgument(file_.path() + ": tensor '" + name + "' has shape " +
                           ShapeString(t.ne, t.n_dims) + ", expected " +
                           ShapeString(want, ne2 != 1 ? 3 : ne1 == 1 ? 1 : 2));
  }
  return t;
}

Result<std::vector<PhasedWeight>> WeightLoader::Stacked(const std::string& name, int64_t n_in,
                                                        int64_t n_out, int64_t n_expert, int64_t rows,
                                                        int64_t row_begin) const {
  if (rows == 0) rows = n_out;
  PAGODA_ASSIGN_OR_RETURN(TensorView t, Shaped(name, n_in, rows, n_expert));
  TensorView slice = t;
  slice.n_dims = 2;
  slice.ne = {n_in, n_out, 1, 1};
  slice.nbytes = n_out * t.row_bytes();
  Status st = kernels::CheckMatMulWeight(slice);
  if (!st.ok()) return st.WithContext(file_.path() + ": tensor '" + name + "'");
  std::vector<PhasedWeight> experts;
  experts.reserve(n_expert);
  for (int64_t e = 0; e < n_expert; ++e) {
    slice.data = t.row(e * rows + row_begin);
    PAGODA_ASSIGN_OR_RETURN(PhasedWeight w, Unpacked(slice));
    experts.push_back(w);
  }
  return experts;
}

Result<TensorView> WeightLoader::Matrix(const std::string& name, int64_t n_in, int64_t n_out) const {
  PAGODA_ASSIGN_OR_RETURN(TensorView t, Shaped(name, n_in, n_out));
  Status st = kernels::CheckMatMulWeight(t);
  if (!st.ok()) return st.WithContext(file_.path() + ": tensor '" + name + "'");
  return t;
}

Result<PhasedWeight> WeightLoader::Linear(const std::string& name, int64_t n_in, int64_t n_out) const {
  PAGODA_ASSIGN_OR_RETURN(TensorView t, Matrix(name, n_in, n_out));
  return Phased(t);
}

Result<PhasedWeight> WeightLoader::Unpacked(const TensorView& t) const {
  PhasedWeight w = PhasedWeight::Shared(t);
  if (decode_ != nullptr) {
    auto copy = decode_->Add(t);
    if (!copy.ok()) return copy.status().WithContext(file_.path() + ": tensor '" + t.name + "'");
    w.by_phase[static_cast<int>(Phase::kDecode)] = *copy;
  }
  return w;
}

Result<PhasedWeight> WeightLoader::Phased(const TensorView& t) const {
  PAGODA_ASSIGN_OR_RETURN(PhasedWeight w, Unpacked(t));
  if (packed_ != nullptr) {
    for (TensorView& v : w.by_phase) {
      auto p = packed_->Add(v);
      if (!p.ok()) return p.status().WithContext(file_.path());
      v = *p;
    }
  }
  return w;
}

Result<TensorView> WeightLoader::Embedding(const std::string& name, int64_t n_embd,
                                           int64_t n_vocab) const {
  PAGODA_ASSIGN_OR_RETURN(TensorView t, Shaped(name, n_embd, n_vocab));
  if (n_embd % GetDTypeInfo(t.type).block_size != 0) {
    return InvalidArgument(file_.path() + ": tensor '" + name + "' rows of " +
                           std::to_string(n_embd) + " are not whole " + DTypeName(t.type) +
                           " blocks");
  }
  // Reading one row proves DequantizeRow supports the type.
  std::vector<float> row(n_embd);
  Status st = kernels::DequantizeRow(t.type, t.row(0), row.data(), n_embd);
  if (!st.ok()) return st.WithContext(file_.path() + ": tensor '" + name + "'");
  return t;
}

Result<const float*> WeightLoader::Vector(const std::string& name, int64_t n) const {
  PAGODA_ASSIGN_OR_RETURN(TensorView t, Shaped(name, n, 1));
  if (t.type != DType::kF32) {
    return InvalidArgument(file_.path() + ": tensor '" + name + "' has type " + DTypeName(t.type) +
                           ", expected F32");
  }
  return static_cast<const float*>(t.data);
}

Result<const float*> WeightLoader::OptionalVector(const std::string& name, int64_t n) const {
  if (!Has(name)) return static_cast<const float*>(nullptr);
  return Vector(name, n);
}

}  // namespace pagoda
