#include "tensor/dtype.h"

#include <cctype>
#include <string>

#include "base/check.h"
#include "tensor/blocks.h"

namespace pagoda {
namespace {

constexpr DTypeInfo kInfos[] = {
    {DType::kF32, "F32", 1, 4, true},
    {DType::kF16, "F16", 1, 2, true},
    {DType::kQ4_0, "Q4_0", kQK4_0, sizeof(BlockQ4_0), true},
    {DType::kQ4_1, "Q4_1", kQK4_1, sizeof(BlockQ4_1), true},
    {DType::kQ5_0, "Q5_0", kQK5_0, sizeof(BlockQ5_0), true},
    {DType::kQ5_1, "Q5_1", 32, 24, false},
    {DType::kQ8_0, "Q8_0", kQK8_0, sizeof(BlockQ8_0), true},
    {DType::kQ8_1, "Q8_1", 32, 36, false},
    {DType::kQ2_K, "Q2_K", kQK_K, 84, false},
    {DType::kQ3_K, "Q3_K", kQK_K, 110, false},
    {DType::kQ4_K, "Q4_K", kQK_K, sizeof(BlockQ4_K), true},
    {DType::kQ5_K, "Q5_K", kQK_K, sizeof(BlockQ5_K), true},
    {DType::kQ6_K, "Q6_K", kQK_K, sizeof(BlockQ6_K), true},
    {DType::kQ8_K, "Q8_K", kQK_K, sizeof(BlockQ8_K), false},
    {DType::kBF16, "BF16", 1, 2, true},
};

}  // namespace

std::optional<DTypeInfo> LookupDType(uint32_t raw) {
  for (const auto& i : kInfos) {
    if (static_cast<uint32_t>(i.type) == raw) return i;
  }
  return std::nullopt;
}

const DTypeInfo& GetDTypeInfo(DType t) {
  for (const auto& i : kInfos) {
    if (i.type == t) return i;
  }
  PAGODA_CHECK(false) << "unknown dtype " << static_cast<uint32_t>(t);
  __builtin_unreachable();
}

const char* DTypeName(DType t) { return GetDTypeInfo(t).name; }

std::optional<DType> ParseDType(std::string_view name) {
  std::string up;
  for (char c : name) up.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  for (const auto& i : kInfos) {
    if (up == i.name) return i.type;
  }
  return std::nullopt;
}

}  // namespace pagoda
