// GgufFile: a GGUF (v2/v3) file opened read-only. Owns the mmap (or, from
// FromMemory, a heap copy); every TensorView it hands out points into it and
// must not outlive the GgufFile (share it as shared_ptr<const GgufFile>).
// Open() validates the whole header, metadata and tensor table against the
// file size, so views are always in bounds; tensor data is never copied.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"
#include "tensor/tensor_view.h"

namespace pagoda {

struct GgufTensorInfo {
  std::string name;
  uint32_t raw_type = 0;        // GGML type id as stored
  DType type = DType::kF32;     // valid: Open() rejects unknown ids
  int n_dims = 0;
  std::array<int64_t, 4> ne = {1, 1, 1, 1};
  uint64_t offset = 0;          // relative to the data section
  int64_t nbytes = 0;
};

class GgufFile {
 public:
  static Result<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // A GGUF image in memory (fuzzers, tests): the bytes are copied into a
  // buffer the GgufFile owns, exactly `size` long so that ASan sees any read
  // past it; `name` stands for the path in errors and path().
  static Result<std::unique_ptr<GgufFile>> FromMemory(std::string name, const uint8_t* data, uint64_t size);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }
  const GgufMetadata& metadata() const { return metadata_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(std::string_view name) const;
  TensorView View(const GgufTensorInfo& info) const;
  // Error names the file and the tensor when absent.
  Result<TensorView> GetTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  // Parses map_[0, size_) and builds the tensor index.
  Status Index();
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  const uint8_t* map_ = nullptr;  // mmap'd unless owned_ holds the bytes
  std::unique_ptr<uint8_t[]> owned_;
  uint64_t size_ = 0;
  uint64_t data_offset_ = 0;
  GgufMetadata metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

// Parses a GGUF image already in memory (used by Open and by the fuzzer).
// `data` must stay valid for the lifetime of the returned views.
struct GgufParsed {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;
  GgufMetadata metadata;
  std::vector<GgufTensorInfo> tensors;
};
Result<GgufParsed> ParseGguf(const uint8_t* data, uint64_t size);

}  // namespace pagoda
