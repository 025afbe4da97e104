// GgufWriter: builds a GGUF v3 file (metadata + tensors) and writes it.
// Used by make-model, quantize, tokenizer import and tests.
#pragma once

#include <cstdint>
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
  // Streams header and tensors to `path` (via a temporary file renamed into
  // place), with general.alignment (default 32) honoured.
  Status Write(const std::string& path) const;
  // Serialises to memory (tests, fuzz corpora).
  std::vector<uint8_t> Serialize() const;
  // Writes version 2 headers instead of 3 (for reader tests).
  void set_version(uint32_t v) { version_ = v; }

 private:
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> bytes;
  };
  uint32_t version_ = 3;
  GgufMetadata metadata_;
  std::vector<Tensor> tensors_;

  std::vector<uint8_t> SerializeHeader() const;  // up to the (aligned) start of tensor data
  uint64_t alignment() const;
};

}  // namespace pagoda
