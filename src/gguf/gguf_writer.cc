#include "gguf/gguf_writer.h"

#include <cstdio>
#include <algorithm>
#include <cstring>

#include "base/check.h"

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
  const auto* p = static_cast<const uint8_t*>(data);
  return AddTensor(name, type, ne, std::vector<uint8_t>(p, p + nbytes));
}

Status GgufWriter::CheckTensor(const std::string& name, DType type, const std::vector<int64_t>& ne,
                               size_t* nbytes) const {
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
  for (const auto& t : tensors_) {
    if (t.name == name) return InvalidArgument("duplicate tensor '" + name + "'");
  }
  *nbytes = static_cast<size_t>(elements / info.block_size * info.type_size);
  return Status::Ok();
}

Status GgufWriter::AddTensor(const std::string& name, DType type, const std::vector<int64_t>& ne,
                             std::vector<uint8_t>&& bytes) {
  size_t want = 0;
  PAGODA_RETURN_IF_ERROR(CheckTensor(name, type, ne, &want));
  if (bytes.size() != want) {
    return InvalidArgument("tensor '" + name + "': got " + std::to_string(bytes.size()) + " bytes, need " +
                           std::to_string(want));
  }
  tensors_.push_back(Tensor{name, type, ne, std::move(bytes), want, false});
  return Status::Ok();
}

Status GgufWriter::DeclareTensor(const std::string& name, DType type, const std::vector<int64_t>& ne) {
  size_t nbytes = 0;
  PAGODA_RETURN_IF_ERROR(CheckTensor(name, type, ne, &nbytes));
  tensors_.push_back(Tensor{name, type, ne, {}, nbytes, true});
  return Status::Ok();
}

uint64_t GgufWriter::alignment() const { return Alignment(metadata_); }

std::vector<uint8_t> GgufWriter::SerializeHeader() const {
  const uint64_t alignment = this->alignment();
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
    offset += t.nbytes;
    offset += (alignment - offset % alignment) % alignment;
  }
  b.PadTo(alignment);
  return std::move(b.bytes);
}

std::vector<uint8_t> GgufWriter::Serialize() const {
  std::vector<uint8_t> out = SerializeHeader();
  const uint64_t alignment = this->alignment();
  for (const auto& t : tensors_) {
    PAGODA_CHECK(!t.declared);  // declared tensors only stream (WriteStreaming)
    out.insert(out.end(), t.bytes.begin(), t.bytes.end());
    while (out.size() % alignment) out.push_back(0);
  }
  return out;
}

Status GgufWriter::Write(const std::string& path) const {
  for (const auto& t : tensors_) {
    if (t.declared) return InvalidArgument("tensor '" + t.name + "' has no bytes (use WriteStreaming)");
  }
  return WriteStreaming(path, nullptr);
}

Status GgufWriter::WriteStreaming(const std::string& path, const TensorSource& source) const {
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return IoError(path + ": cannot open for writing: " + std::strerror(errno));
  const std::vector<uint8_t> header = SerializeHeader();
  const uint64_t alignment = this->alignment();
  static const uint8_t kZeros[256] = {};
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  Status st = Status::Ok();
  std::vector<uint8_t> streamed;
  for (size_t i = 0; ok && i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    const std::vector<uint8_t>* bytes = &t.bytes;
    if (t.declared) {
      streamed.clear();
      st = source ? source(i, streamed) : InvalidArgument("tensor '" + t.name + "' has no source");
      if (st.ok() && streamed.size() != t.nbytes) {
        st = InvalidArgument("tensor '" + t.name + "': source gave " + std::to_string(streamed.size()) +
                             " bytes, need " + std::to_string(t.nbytes));
      }
      if (!st.ok()) break;
      bytes = &streamed;
    }
    ok = std::fwrite(bytes->data(), 1, bytes->size(), f) == bytes->size();
    const size_t pad = (alignment - bytes->size() % alignment) % alignment;
    for (size_t left = pad; ok && left > 0;) {
      const size_t n = std::min(left, sizeof kZeros);
      ok = std::fwrite(kZeros, 1, n, f) == n;
      left -= n;
    }
  }
  int close_rc = std::fclose(f);
  if (!st.ok() || !ok || close_rc != 0) {
    std::remove(tmp.c_str());
    return st.ok() ? IoError(path + ": write failed") : st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return IoError(path + ": rename failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace pagoda
