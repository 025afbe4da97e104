// Internal to src/kvevents: the frame conventions vLLM's ZmqEventPublisher
// uses (sequence numbers as 8-byte big-endian, replay end marker -1), shared
// by the publisher and the subscriber. Not a public header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda::kvevents::internal {

inline std::string SeqBytes(uint64_t seq) {
  std::string b(8, '\0');
  for (int i = 7; i >= 0; --i, seq >>= 8) b[i] = static_cast<char>(seq & 0xff);
  return b;
}

// nullopt unless exactly 8 bytes.
inline std::optional<uint64_t> ParseSeq(std::string_view b) {
  if (b.size() != 8) return std::nullopt;
  uint64_t v = 0;
  for (char c : b) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

// vLLM's END_SEQ: (-1).to_bytes(8, "big", signed=True).
inline constexpr uint64_t kEndSeq = ~uint64_t{0};

}  // namespace pagoda::kvevents::internal
