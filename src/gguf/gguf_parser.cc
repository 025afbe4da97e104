// GGUF v2/v3 parser over an in-memory image. Every read is bounds-checked and
// every count is checked against the bytes left before anything is allocated,
// so a corrupt or hostile file yields a Status, never a crash or a huge
// allocation.
#include <cstring>
#include <limits>
#include <string>

#include "gguf/gguf_file.h"

namespace pagoda {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxArrayDepth = 8;
constexpr uint64_t kMaxKeyLength = 65535;
constexpr uint64_t kMaxTensorNameLength = 1024;
constexpr int kMaxDims = 4;

class Reader {
 public:
  Reader(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  template <class T>
  Status Read(T* out, const char* what) {
    if (left() < sizeof(T)) return Truncated(what);
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status ReadString(std::string* out, uint64_t max_len, const char* what) {
    uint64_t len{};
    PAGODA_RETURN_IF_ERROR(Read(&len, what));
    if (len > left()) return Truncated(what);
    if (len > max_len) {
      return DataLoss(std::string(what) + " is " + std::to_string(len) + " bytes long (limit " +
                      std::to_string(max_len) + ") at offset " + std::to_string(pos_ - 8));
    }
    out->assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

  Status Truncated(const char* what) const {
    return DataLoss(std::string("file truncated while reading ") + what + " at offset " +
                    std::to_string(pos_));
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// Smallest encoded size of one value of type t (for count sanity checks).
uint64_t MinEncodedSize(GgufType t) {
  switch (t) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    case GgufType::kString: return 8;
    case GgufType::kArray: return 12;
  }
  return 1;
}

bool ValidType(uint32_t t) { return t <= 12; }

template <class T>
Status ReadScalar(Reader& r, GgufValue* out, const char* what) {
  T v{};
  PAGODA_RETURN_IF_ERROR(r.Read(&v, what));
  *out = GgufValue(v);
  return Status::Ok();
}

Status ReadValue(Reader& r, GgufType type, int depth, GgufValue* out, const std::string& key) {
  const char* what = "metadata value";
  switch (type) {
    case GgufType::kU8: return ReadScalar<uint8_t>(r, out, what);
    case GgufType::kI8: return ReadScalar<int8_t>(r, out, what);
    case GgufType::kU16: return ReadScalar<uint16_t>(r, out, what);
    case GgufType::kI16: return ReadScalar<int16_t>(r, out, what);
    case GgufType::kU32: return ReadScalar<uint32_t>(r, out, what);
    case GgufType::kI32: return ReadScalar<int32_t>(r, out, what);
    case GgufType::kF32: return ReadScalar<float>(r, out, what);
    case GgufType::kU64: return ReadScalar<uint64_t>(r, out, what);
    case GgufType::kI64: return ReadScalar<int64_t>(r, out, what);
    case GgufType::kF64: return ReadScalar<double>(r, out, what);
    case GgufType::kBool: {
      uint8_t b{};
      PAGODA_RETURN_IF_ERROR(r.Read(&b, what));
      if (b > 1) return DataLoss("metadata key '" + key + "': bool value " + std::to_string(b) + " is not 0 or 1");
      *out = GgufValue(b == 1);
      return Status::Ok();
    }
    case GgufType::kString: {
      std::string s;
      PAGODA_RETURN_IF_ERROR(r.ReadString(&s, std::numeric_limits<uint64_t>::max(), "metadata string"));
      *out = GgufValue(std::move(s));
      return Status::Ok();
    }
    case GgufType::kArray: {
      if (depth >= kMaxArrayDepth) return DataLoss("metadata key '" + key + "': arrays nested too deeply");
      uint32_t elem_raw{};
      uint64_t count{};
      PAGODA_RETURN_IF_ERROR(r.Read(&elem_raw, "array element type"));
      if (!ValidType(elem_raw)) {
        return DataLoss("metadata key '" + key + "': unknown array element type " + std::to_string(elem_raw));
      }
      PAGODA_RETURN_IF_ERROR(r.Read(&count, "array length"));
      GgufType elem = static_cast<GgufType>(elem_raw);
      if (count > r.left() / MinEncodedSize(elem)) {
        return DataLoss("metadata key '" + key + "': array of " + std::to_string(count) +
                        " elements does not fit in the file");
      }
      GgufArray arr;
      arr.elem_type = elem;
      arr.items.resize(count);
      for (uint64_t i = 0; i < count; ++i) {
        PAGODA_RETURN_IF_ERROR(ReadValue(r, elem, depth + 1, &arr.items[i], key));
      }
      *out = GgufValue(std::move(arr));
      return Status::Ok();
    }
  }
  return DataLoss("metadata key '" + key + "': unknown value type");
}

}  // namespace

Result<GgufParsed> ParseGguf(const uint8_t* data, uint64_t size) {
  Reader r(data, size);
  GgufParsed out;
  uint32_t magic{};
  if (size < 4) return DataLoss("file too small to be GGUF (" + std::to_string(size) + " bytes)");
  PAGODA_RETURN_IF_ERROR(r.Read(&magic, "magic"));
  if (magic != kMagic) return DataLoss("not a GGUF file (bad magic)");
  PAGODA_RETURN_IF_ERROR(r.Read(&out.version, "version"));
  if (out.version == 1) return Unimplemented("GGUF version 1 is not supported (only 2 and 3)");
  if (out.version != 2 && out.version != 3) {
    return DataLoss("unsupported GGUF version " + std::to_string(out.version) +
                    " (a big-endian file, or corrupt; only little-endian v2/v3 are supported)");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  PAGODA_RETURN_IF_ERROR(r.Read(&n_tensors, "tensor count"));
  PAGODA_RETURN_IF_ERROR(r.Read(&n_kv, "metadata count"));
  // Each KV needs >= 8 (key len) + 4 (type) + 1 bytes; each tensor info >= 8+4+8+4+8.
  if (n_kv > r.left() / 13) return DataLoss("metadata count " + std::to_string(n_kv) + " does not fit in the file");
  if (n_tensors > r.left() / 32) return DataLoss("tensor count " + std::to_string(n_tensors) + " does not fit in the file");

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    PAGODA_RETURN_IF_ERROR(r.ReadString(&key, kMaxKeyLength, "metadata key"));
    uint32_t type_raw{};
    PAGODA_RETURN_IF_ERROR(r.Read(&type_raw, "metadata value type"));
    if (!ValidType(type_raw)) {
      return DataLoss("metadata key '" + key + "' has unknown value type " + std::to_string(type_raw));
    }
    GgufValue v;
    PAGODA_RETURN_IF_ERROR(ReadValue(r, static_cast<GgufType>(type_raw), 0, &v, key));
    if (out.metadata.Has(key)) return DataLoss("duplicate metadata key '" + key + "'");
    out.metadata.Set(std::move(key), std::move(v));
  }

  if (const GgufValue* a = out.metadata.Find("general.alignment")) {
    int64_t al;
    if (!a->AsInt(&al) || al <= 0 || (al & (al - 1)) != 0 || al > (1 << 20)) {
      return DataLoss("general.alignment must be a power of two, got " + a->ToDisplayString());
    }
    out.alignment = static_cast<uint64_t>(al);
  }

  out.tensors.resize(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo& t = out.tensors[i];
    PAGODA_RETURN_IF_ERROR(r.ReadString(&t.name, kMaxTensorNameLength, "tensor name"));
    uint32_t n_dims{};
    PAGODA_RETURN_IF_ERROR(r.Read(&n_dims, "tensor dimension count"));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return DataLoss("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions (1-4 allowed)");
    }
    t.n_dims = static_cast<int>(n_dims);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne{};
      PAGODA_RETURN_IF_ERROR(r.Read(&ne, "tensor dimension"));
      if (ne == 0 || ne > (uint64_t{1} << 40) || elements > (uint64_t{1} << 50) / ne) {
        return DataLoss("tensor '" + t.name + "' has absurd dimension " + std::to_string(ne));
      }
      elements *= ne;
      t.ne[d] = static_cast<int64_t>(ne);
    }
    PAGODA_RETURN_IF_ERROR(r.Read(&t.raw_type, "tensor type"));
    PAGODA_RETURN_IF_ERROR(r.Read(&t.offset, "tensor offset"));
    auto info = LookupDType(t.raw_type);
    if (!info) {
      return Unimplemented("tensor '" + t.name + "' has unsupported tensor type " + std::to_string(t.raw_type));
    }
    t.type = info->type;
    if (t.ne[0] % info->block_size != 0) {
      return DataLoss("tensor '" + t.name + "': row length " + std::to_string(t.ne[0]) +
                      " is not a multiple of the " + info->name + " block size");
    }
    t.nbytes = static_cast<int64_t>(elements / info->block_size * info->type_size);
    if (t.offset % out.alignment != 0) {
      return DataLoss("tensor '" + t.name + "' offset " + std::to_string(t.offset) + " is not aligned to " +
                      std::to_string(out.alignment));
    }
  }

  uint64_t pos = r.pos();
  out.data_offset = pos + (out.alignment - pos % out.alignment) % out.alignment;
  if (out.data_offset > size && n_tensors > 0) return DataLoss("file truncated before tensor data");
  const uint64_t data_size = size >= out.data_offset ? size - out.data_offset : 0;
  for (const auto& t : out.tensors) {
    if (t.offset > data_size || static_cast<uint64_t>(t.nbytes) > data_size - t.offset) {
      return DataLoss("tensor '" + t.name + "' data [" + std::to_string(t.offset) + ", +" +
                      std::to_string(t.nbytes) + ") lies past the end of the file (data section is " +
                      std::to_string(data_size) + " bytes)");
    }
  }
  return out;
}

}  // namespace pagoda
