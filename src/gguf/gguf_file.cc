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
  auto parsed = ParseGguf(f->map_, size);
  if (!parsed.ok()) return parsed.status().WithContext(path);
  f->version_ = parsed->version;
  f->alignment_ = parsed->alignment;
  f->data_offset_ = parsed->data_offset;
  f->metadata_ = std::move(parsed->metadata);
  f->tensors_ = std::move(parsed->tensors);
  for (size_t i = 0; i < f->tensors_.size(); ++i) {
    if (!f->tensor_index_.emplace(f->tensors_[i].name, i).second) {
      return DataLoss(path + ": duplicate tensor name '" + f->tensors_[i].name + "'");
    }
  }
  return f;
}

GgufFile::~GgufFile() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
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
