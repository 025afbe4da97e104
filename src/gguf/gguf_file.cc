#include "gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pagoda {

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return IoError(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": not a regular file");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return DataLoss(path + ": file is empty");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int map_errno = errno;
  ::close(fd);
  if (map == MAP_FAILED) return IoError(path + ": mmap failed: " + std::strerror(map_errno));

  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->map_ = static_cast<const uint8_t*>(map);
  f->size_ = size;
  PAGODA_RETURN_IF_ERROR(f->Index());
  return f;
}

Result<std::unique_ptr<GgufFile>> GgufFile::FromMemory(std::string name, const uint8_t* data, uint64_t size) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = std::move(name);
  // new[] aligns to __STDCPP_DEFAULT_NEW_ALIGNMENT__ (16 on x86-64): enough
  // for scalar reads of the views; Open's mmap is page-aligned.
  f->owned_ = std::make_unique_for_overwrite<uint8_t[]>(size);
  if (size > 0) std::memcpy(f->owned_.get(), data, size);
  f->map_ = f->owned_.get();
  f->size_ = size;
  PAGODA_RETURN_IF_ERROR(f->Index());
  return f;
}

Status GgufFile::Index() {
  auto parsed = ParseGguf(map_, size_);
  if (!parsed.ok()) return parsed.status().WithContext(path_);
  version_ = parsed->version;
  alignment_ = parsed->alignment;
  data_offset_ = parsed->data_offset;
  metadata_ = std::move(parsed->metadata);
  tensors_ = std::move(parsed->tensors);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensor_index_.emplace(tensors_[i].name, i).second) {
      return DataLoss(path_ + ": duplicate tensor name '" + tensors_[i].name + "'");
    }
  }
  return Status::Ok();
}

GgufFile::~GgufFile() {
  if (map_ && !owned_) ::munmap(const_cast<uint8_t*>(map_), size_);
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

TensorView GgufFile::View(const GgufTensorInfo& info) const {
  TensorView v;
  v.name = info.name;
  v.type = info.type;
  v.n_dims = info.n_dims;
  v.ne = info.ne;
  v.data = map_ + data_offset_ + info.offset;
  v.nbytes = info.nbytes;
  return v;
}

Result<TensorView> GgufFile::GetTensor(std::string_view name) const {
  const GgufTensorInfo* info = FindTensor(name);
  if (!info) return NotFound(path_ + ": missing tensor '" + std::string(name) + "'");
  return View(*info);
}

}  // namespace pagoda
