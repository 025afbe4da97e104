// The packed 6-bit sub-block scales and mins of a Q4_K / Q5_K super-block
// (blocks.h), unpacked with plain integer code. Internal linkage, so the
// per-ISA kernel files that include it never share (ODR-merge) code built
// with different flags.
#pragma once

#include <cstdint>
#include <cstring>

namespace pagoda::kernels::internal {
namespace {

// The 12 scale bytes at s -> sc[0..7] and m[0..7] (6 bits each) as the
// bytes of *sc and *m, sub-block j in byte j.
inline void ScalesMinsK4(const uint8_t* s, uint64_t* sc, uint64_t* m) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, s, 4);
  std::memcpy(&w1, s + 4, 4);
  std::memcpy(&w2, s + 8, 4);
  const uint32_t sc_hi = (w2 & 0x0f0f0f0f) | ((w0 >> 2) & 0x30303030);
  const uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0f) | ((w1 >> 2) & 0x30303030);
  *sc = (w0 & 0x3f3f3f3f) | (static_cast<uint64_t>(sc_hi) << 32);
  *m = (w1 & 0x3f3f3f3f) | (static_cast<uint64_t>(m_hi) << 32);
}

}  // namespace
}  // namespace pagoda::kernels::internal
