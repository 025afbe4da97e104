#include "gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>

namespace pagoda {
namespace {

class Buffer {
 public:
  template <class T>
  void Put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void PadTo(uint64_t alignment) {
    while (bytes.size() % alignment) bytes.push_back(0);
  }
  std::vector<uint8_t> bytes;
};

void PutValue(Buffer& b, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          b.PutString(x);
        } else if constexpr (std::is_same_v<T, bool>) {
          b.Put<uint8_t>(x ? 1 : 0);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          b.Put<uint32_t>(static_cast<uint32_t>(x.elem_type));
          b.Put<uint64_t>(x.items.size());
          for (const auto& item : x.items) PutValue(b, item);
        } else {
          b.Put<T>(x);
        }
      },
      v.storage());
}

uint64_t Alignment(const GgufMetadata& md) {
  int64_t a = 32;
  if (const GgufValue* v = md.Find("general.alignment")) {
    if (!v->AsInt(&a) || a <= 0) a = 32;
  }
  return static_cast<uint64_t>(a);
}

}  // namespace

Status GgufWriter::AddTensor(const std::string& name, DType type, const std::vector<int64_t>& ne,
                             const void* data, size_t nbytes) {
  if (ne.empty() || ne.size() > 4) return InvalidArgument("tensor '" + name + "': 1-4 dimensions required");
  int64_t elements = 1;
  for (int64_t d : ne) {
    if (d <= 0) return InvalidArgument("tensor '" + name + "': non-positive dimension");
    elements *= d;
  }
  const DTypeInfo& info = GetDTypeInfo(type);
  if (ne[0] % info.block_size != 0) {
    return InvalidArgument("tensor '" + name + "': ne0 not a multiple of the block size");
  }
  const size_t want = static_cast<size_t>(elements / info.block_size * info.type_size);
  if (nbytes != want) {
    return InvalidArgument("tensor '" + name + "': got " + std::to_string(nbytes) + " bytes, need " +
                           std::to_string(want));
  }
  for (const auto& t : tensors_) {
    if (t.name == name) return InvalidArgument("duplicate tensor '" + name + "'");
  }
  Tensor t{name, type, ne, {}};
  t.bytes.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + nbytes);
  tensors_.push_back(std::move(t));
  return Status::Ok();
}

std::vector<uint8_t> GgufWriter::Serialize() const {
  const uint64_t alignment = Alignment(metadata_);
  Buffer b;
  b.Put<uint32_t>(0x46554747);
  b.Put<uint32_t>(version_);
  b.Put<uint64_t>(tensors_.size());
  b.Put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_.entries()) {
    b.PutString(key);
    b.Put<uint32_t>(static_cast<uint32_t>(value.type()));
    PutValue(b, value);
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    b.PutString(t.name);
    b.Put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) b.Put<uint64_t>(static_cast<uint64_t>(d));
    b.Put<uint32_t>(static_cast<uint32_t>(t.type));
    b.Put<uint64_t>(offset);
    offset += t.bytes.size();
    offset += (alignment - offset % alignment) % alignment;
  }
  b.PadTo(alignment);
  for (const auto& t : tensors_) {
    b.bytes.insert(b.bytes.end(), t.bytes.begin(), t.bytes.end());
    b.PadTo(alignment);
  }
  return std::move(b.bytes);
}

Status GgufWriter::Write(const std::string& path) const {
  std::vector<uint8_t> bytes = Serialize();
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return IoError(path + ": cannot open for writing: " + std::strerror(errno));
  size_t n = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int close_rc = std::fclose(f);
  if (n != bytes.size() || close_rc != 0) {
    std::remove(tmp.c_str());
    return IoError(path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return IoError(path + ": rename failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace pagoda
