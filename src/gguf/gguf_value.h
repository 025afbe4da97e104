// GgufValue: one GGUF metadata value (scalar, string or possibly nested array).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace pagoda {

// GGUF metadata value type codes (gguf.md).
enum class GgufType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6,
  kBool = 7, kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};
const char* GgufTypeName(GgufType t);

class GgufValue;
struct GgufArray {
  GgufType elem_type = GgufType::kU8;
  std::vector<GgufValue> items;
};

class GgufValue {
 public:
  // Alternatives are in GgufType order, so index() == type code.
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, GgufArray, uint64_t, int64_t, double>;
  GgufValue() = default;
  template <class T>
  GgufValue(T v) : v_(std::move(v)) {}  // NOLINT
  GgufValue(const char* s) : v_(std::string(s)) {}  // NOLINT

  static GgufValue Array(GgufType elem_type, std::vector<GgufValue> items);
  static GgufValue StringArray(const std::vector<std::string>& items);
  static GgufValue F32Array(const std::vector<float>& items);
  static GgufValue I32Array(const std::vector<int32_t>& items);

  GgufType type() const { return static_cast<GgufType>(v_.index()); }
  bool is_integer() const;
  bool is_float() const;
  bool is_string() const { return type() == GgufType::kString; }
  bool is_array() const { return type() == GgufType::kArray; }

  // Any integer type (bool excluded); false if not an integer or out of int64 range.
  bool AsInt(int64_t* out) const;
  // Any integer or float type.
  bool AsDouble(double* out) const;
  const std::string* AsString() const { return std::get_if<std::string>(&v_); }
  const GgufArray* AsArray() const { return std::get_if<GgufArray>(&v_); }
  const bool* AsBool() const { return std::get_if<bool>(&v_); }

  const Storage& storage() const { return v_; }
  // Short human-readable rendering (arrays abbreviated) for `pagoda inspect`.
  std::string ToDisplayString(size_t max_items = 8) const;

 private:
  Storage v_;
};

}  // namespace pagoda
