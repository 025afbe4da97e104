#include "gguf/gguf_value.h"

#include <cstdio>
#include <limits>
#include <sstream>

namespace pagoda {

const char* GgufTypeName(GgufType t) {
  switch (t) {
    case GgufType::kU8: return "u8";
    case GgufType::kI8: return "i8";
    case GgufType::kU16: return "u16";
    case GgufType::kI16: return "i16";
    case GgufType::kU32: return "u32";
    case GgufType::kI32: return "i32";
    case GgufType::kF32: return "f32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kU64: return "u64";
    case GgufType::kI64: return "i64";
    case GgufType::kF64: return "f64";
  }
  return "unknown";
}

GgufValue GgufValue::Array(GgufType elem_type, std::vector<GgufValue> items) {
  GgufArray a;
  a.elem_type = elem_type;
  a.items = std::move(items);
  return GgufValue(std::move(a));
}

GgufValue GgufValue::StringArray(const std::vector<std::string>& items) {
  std::vector<GgufValue> v;
  v.reserve(items.size());
  for (const auto& s : items) v.emplace_back(s);
  return Array(GgufType::kString, std::move(v));
}

GgufValue GgufValue::F32Array(const std::vector<float>& items) {
  std::vector<GgufValue> v(items.begin(), items.end());
  return Array(GgufType::kF32, std::move(v));
}

GgufValue GgufValue::I32Array(const std::vector<int32_t>& items) {
  std::vector<GgufValue> v(items.begin(), items.end());
  return Array(GgufType::kI32, std::move(v));
}

bool GgufValue::is_integer() const {
  switch (type()) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kU16: case GgufType::kI16:
    case GgufType::kU32: case GgufType::kI32: case GgufType::kU64: case GgufType::kI64:
      return true;
    default:
      return false;
  }
}

bool GgufValue::is_float() const { return type() == GgufType::kF32 || type() == GgufType::kF64; }

bool GgufValue::AsInt(int64_t* out) const {
  return std::visit(
      [out](const auto& v) -> bool {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, float> || std::is_same_v<T, double> ||
                      std::is_same_v<T, std::string> || std::is_same_v<T, GgufArray>) {
          return false;
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
          *out = static_cast<int64_t>(v);
          return true;
        } else {
          *out = static_cast<int64_t>(v);
          return true;
        }
      },
      v_);
}

bool GgufValue::AsDouble(double* out) const {
  if (type() == GgufType::kF32) { *out = std::get<float>(v_); return true; }
  if (type() == GgufType::kF64) { *out = std::get<double>(v_); return true; }
  if (type() == GgufType::kU64) { *out = static_cast<double>(std::get<uint64_t>(v_)); return true; }
  int64_t i;
  if (AsInt(&i)) { *out = static_cast<double>(i); return true; }
  return false;
}

std::string GgufValue::ToDisplayString(size_t max_items) const {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          os << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, std::string>) {
          std::string s = v.size() > 80 ? v.substr(0, 77) + "..." : v;
          os << '"';
          for (char c : s) {
            if (c == '\n') os << "\\n";
            else if (c == '"') os << "\\\"";
            else if (static_cast<unsigned char>(c) < 0x20) os << ' ';
            else os << c;
          }
          os << '"';
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          os << "[" << GgufTypeName(v.elem_type) << " x " << v.items.size() << "]";
          if (!v.items.empty()) {
            os << " [";
            for (size_t i = 0; i < v.items.size() && i < max_items; ++i) {
              if (i) os << ", ";
              os << v.items[i].ToDisplayString(max_items);
            }
            if (v.items.size() > max_items) os << ", ...";
            os << "]";
          }
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          os << static_cast<int>(v);
        } else {
          os << v;
        }
      },
      v_);
  return os.str();
}

}  // namespace pagoda
