#include "model/quantize_model.h"

#include <string_view>
#include <vector>

#include "kernels/cpu/quantize_weights.h"

namespace pagoda {
namespace {

// llama.cpp's llama_ftype values for general.file_type.
uint32_t FileType(DType t) {
  switch (t) {
    case DType::kQ4_0: return 2;   // MOSTLY_Q4_0
    case DType::kQ4_1: return 3;   // MOSTLY_Q4_1
    case DType::kQ8_0: return 7;   // MOSTLY_Q8_0
    case DType::kQ5_0: return 8;   // MOSTLY_Q5_0
    case DType::kQ4_K: return 14;  // MOSTLY_Q4_K_S (every matrix Q4_K)
    default: return 0;
  }
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool CanQuantizeFrom(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ8_0;
}

bool FitsBlocks(DType t, int64_t n) { return n % GetDTypeInfo(t).block_size == 0; }

// llama.cpp's fallback when rows are not whole blocks of the wanted type.
DType Fallback(DType t, int64_t n) {
  while (!FitsBlocks(t, n)) {
    switch (t) {
      case DType::kQ4_K: t = DType::kQ5_0; break;
      case DType::kQ6_K: t = DType::kQ8_0; break;
      default: return DType::kF16;
    }
  }
  return t;
}

}  // namespace

Result<DType> ParseQuantizeType(const std::string& name) {
  const std::optional<DType> t = ParseDType(name);
  if (!t || FileType(*t) == 0) {
    return InvalidArgument("unknown quantization type '" + name + "' (expected q8_0, q4_0, q4_1, q5_0 or q4_k)");
  }
  return *t;
}

Result<DType> QuantizedTensorType(const GgufTensorInfo& t, DType target) {
  const bool matrix = t.n_dims == 2 && EndsWith(t.name, ".weight");
  if (!matrix) return t.type;
  DType want = target;
  if (t.name == "output.weight" && target != DType::kQ8_0) want = DType::kQ6_K;
  want = Fallback(want, t.ne[0]);
  if (want == t.type) return want;  // nothing to do (e.g. Q8_0 -> Q8_0)
  if (!CanQuantizeFrom(t.type)) {
    return InvalidArgument("tensor '" + t.name + "' is " + DTypeName(t.type) + ": quantize needs F32, F16, BF16 or " +
                           "Q8_0 inputs (re-quantizing " + DTypeName(t.type) + " to " + DTypeName(want) +
                           " would only lose accuracy)");
  }
  return want;
}

Result<GgufWriter> QuantizeModel(const GgufFile& in, const QuantizeModelOptions& options, ThreadPool& pool,
                                 QuantizeModelReport* report) {
  if (FileType(options.type) == 0) {
    return InvalidArgument(std::string("quantize: unsupported type ") + DTypeName(options.type));
  }
  // Every tensor's type is decided (and refused) before any work is done.
  std::vector<DType> out_types;
  for (const GgufTensorInfo& t : in.tensors()) {
    auto ty = QuantizedTensorType(t, options.type);
    if (!ty.ok()) return ty.status().WithContext(in.path());
    out_types.push_back(*ty);
  }
  GgufWriter w;
  for (const auto& [key, value] : in.metadata().entries()) w.metadata().Set(key, value);
  w.metadata().Set("general.file_type", GgufValue(FileType(options.type)));
  w.metadata().Set("general.quantization_version", GgufValue(uint32_t{2}));
  QuantizeModelReport rep;
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const GgufTensorInfo& info = in.tensors()[i];
    const TensorView src = in.View(info);
    std::vector<int64_t> ne(info.ne.begin(), info.ne.begin() + std::max(info.n_dims, 1));
    rep.bytes_in += info.nbytes;
    if (out_types[i] == info.type) {
      PAGODA_RETURN_IF_ERROR(w.AddTensor(info.name, info.type, ne, src.data, static_cast<size_t>(info.nbytes)));
      rep.bytes_out += info.nbytes;
    } else {
      std::vector<uint8_t> bytes(static_cast<size_t>(src.rows() * RowBytes(out_types[i], info.ne[0])));
      Status st = kernels::RequantizeTensor(src, out_types[i], bytes.data(), pool);
      if (!st.ok()) return st.WithContext(in.path() + ": tensor '" + info.name + "'");
      rep.bytes_out += static_cast<int64_t>(bytes.size());
      PAGODA_RETURN_IF_ERROR(w.AddTensor(info.name, out_types[i], ne, std::move(bytes)));
      ++rep.n_quantized;
    }
    ++rep.n_tensors;
  }
  if (report) *report = rep;
  return w;
}

Status QuantizeModelFile(const std::string& in_path, const std::string& out_path,
                         const QuantizeModelOptions& options, ThreadPool& pool, QuantizeModelReport* report) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> in, GgufFile::Open(in_path));
  PAGODA_ASSIGN_OR_RETURN(GgufWriter w, QuantizeModel(*in, options, pool, report));
  return w.Write(out_path);
}

}  // namespace pagoda
