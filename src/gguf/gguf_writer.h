// GgufWriter: builds a GGUF v3 file (metadata + tensors) and writes it.
// Used by make-model, quantize, tokenizer import and tests. Tensors either
// carry their bytes (AddTensor) or are declared by name, type and shape only
// (DeclareTensor) and produced one at a time while the file is written
// (WriteStreaming), so a file larger than memory can be generated: the header
// with every tensor's offset goes first, then each tensor in turn.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"
#include "tensor/dtype.h"

namespace pagoda {

class GgufWriter {
 public:
  GgufMetadata& metadata() { return metadata_; }
  // ne in GGML order (ne[0] contiguous). data must hold exactly the tensor's
  // byte size for `type`; it is copied.
  Status AddTensor(const std::string& name, DType type, const std::vector<int64_t>& ne,
                   const void* data, size_t nbytes);
  // Takes ownership of `bytes` (no copy): for large generated tensors.
  Status AddTensor(const std::string& name, DType type, const std::vector<int64_t>& ne,
                   std::vector<uint8_t>&& bytes);
  // A tensor whose bytes are supplied only when the file is written
  // (WriteStreaming). Same checks as AddTensor.
  Status DeclareTensor(const std::string& name, DType type, const std::vector<int64_t>& ne);
  // Streams header and tensors to `path` (via a temporary file renamed into
  // place), with general.alignment (default 32) honoured. Every tensor must
  // hold its bytes.
  Status Write(const std::string& path) const;
  // Fills `bytes` with the bytes of the index-th tensor (in AddTensor /
  // DeclareTensor order), exactly its byte size.
  using TensorSource = std::function<Status(size_t index, std::vector<uint8_t>& bytes)>;
  // As Write, but the bytes of declared tensors come from `source`, called
  // once per declared tensor in file order and written before the next call:
  // memory holds one tensor at a time. The file equals Serialize() of the
  // same writer with those bytes added.
  Status WriteStreaming(const std::string& path, const TensorSource& source) const;
  // Serialises to memory (tests, fuzz corpora).
  std::vector<uint8_t> Serialize() const;
  // Writes version 2 headers instead of 3 (for reader tests).
  void set_version(uint32_t v) { version_ = v; }

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> bytes;  // empty for a declared tensor
    size_t nbytes = 0;
    bool declared = false;
  };
  uint32_t version_ = 3;
  GgufMetadata metadata_;
  std::vector<Tensor> tensors_;

  Status CheckTensor(const std::string& name, DType type, const std::vector<int64_t>& ne,
                     size_t* nbytes) const;
  std::vector<uint8_t> SerializeHeader() const;  // up to the (aligned) start of tensor data
  uint64_t alignment() const;
};

}  // namespace pagoda
