// Tensor element types. Numeric values are GGML's type ids, as stored in GGUF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kBF16 = 30,
};

struct DTypeInfo {
  DType type;
  const char* name;     // "Q4_K"
  int64_t block_size;   // elements per block
  int64_t type_size;    // bytes per block
  bool weights_supported;  // usable as a model weight by this engine
};

// Info for a raw GGML type id; nullopt for ids this engine does not know.
std::optional<DTypeInfo> LookupDType(uint32_t raw);
const DTypeInfo& GetDTypeInfo(DType t);  // t must be a known type
const char* DTypeName(DType t);
std::optional<DType> ParseDType(std::string_view name);  // "q4_0", "Q4_0", "f16" ...

// Bytes of a row of n elements; n must be a multiple of the block size.
inline int64_t RowBytes(DType t, int64_t n) {
  const DTypeInfo& i = GetDTypeInfo(t);
  return n / i.block_size * i.type_size;
}

}  // namespace pagoda
