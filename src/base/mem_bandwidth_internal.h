// Between mem_bandwidth.cc and its AVX2 twin (compiled with -mavx2): plain
// functions only, so no ISA-flagged code is merged into generic callers.
#pragma once

#include <cstdint>

namespace pagoda::internal {

// Sum of the 64-bit words of n_lines 64-byte lines at p (64-byte aligned), so
// that the loads cannot be optimized away.
uint64_t SumLinesAvx2(const uint8_t* p, int64_t n_lines);
// The portable twin (any alignment).
uint64_t SumLinesGeneric(const uint8_t* p, int64_t n_lines);

}  // namespace pagoda::internal
