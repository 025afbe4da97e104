// WeightLoader: fetches a model's tensors from a GGUF file by name with shape
// and type checks, so that a bad file fails at load time with a Status naming
// the file and the tensor, never in a kernel. Returns views into the mmap.
// With a DecodeWeightStore (--decode-weights), Linear() also makes the decode
// copy of each linear weight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "kernels/cpu/packed_weights.h"
#include "model/decode_weight_store.h"
#include "model/layers/phased_weight.h"
#include "tensor/tensor_view.h"

namespace pagoda {

class WeightLoader {
 public:
  // decode: makes the decode copies (--decode-weights); packed: packs the
  // linear weights (both phases) for the active ISA. Both optional.
  explicit WeightLoader(const GgufFile& file, DecodeWeightStore* decode = nullptr,
                        kernels::PackedWeightStore* packed = nullptr)
      : file_(file), decode_(decode), packed_(packed) {}

  const GgufFile& file() const { return file_; }
  bool Has(const std::string& name) const { return file_.FindTensor(name) != nullptr; }

  // A matrix for MatMul: GGML ne = [n_in, n_out], a type MatMul supports.
  Result<TensorView> Matrix(const std::string& name, int64_t n_in, int64_t n_out) const;
  // A linear layer's weight: Matrix() for prefill and, with a decode store,
  // its decode copy (else the same view). Layers load weights through this.
  Result<PhasedWeight> Linear(const std::string& name, int64_t n_in, int64_t n_out) const;
  // As Linear, for a tensor already fetched (the LM head tied to token_embd).
  Result<PhasedWeight> Phased(const TensorView& prefill) const;
  // The 2-D slices of a stacked tensor (GGML ne = [n_in, rows, n_slices],
  // rows = n_out unless given): rows [row_begin, row_begin + n_out) of each
  // slice, as one linear weight per slice. MoE experts (a merged
  // ffn_gate_up_exps holds gate rows then up rows) and MLA's per-head
  // attn_k_b / attn_v_b. Views into the mmap, never packed copies, so experts
  // no step selects cost page cache rather than RAM; decode copies as Linear().
  Result<std::vector<PhasedWeight>> Stacked(const std::string& name, int64_t n_in, int64_t n_out,
                                           int64_t n_slices, int64_t rows = 0,
                                           int64_t row_begin = 0) const;
  // An embedding table [n_embd, n_vocab] whose rows DequantizeRow can read.
  Result<TensorView> Embedding(const std::string& name, int64_t n_embd, int64_t n_vocab) const;
  // An F32 vector of n elements (norm weights, biases).
  Result<const float*> Vector(const std::string& name, int64_t n) const;
  // As Vector, but nullptr when the tensor is absent.
  Result<const float*> OptionalVector(const std::string& name, int64_t n) const;

  // "blk.<layer>.<suffix>"
  static std::string LayerName(int layer, const char* suffix);

 private:
  // PhasedWeight::Shared(t) plus its decode copy (with a decode store); never packed.
  Result<PhasedWeight> Unpacked(const TensorView& t) const;
  Result<TensorView> Shaped(const std::string& name, int64_t ne0, int64_t ne1, int64_t ne2 = 1) const;
  const GgufFile& file_;
  DecodeWeightStore* decode_ = nullptr;  // not owned; may be null
  kernels::PackedWeightStore* packed_ = nullptr;  // not owned; may be null
};

}  // namespace pagoda
