// The KV transfer stream: how a prefill replica hands a prompt's KV blocks
// to its decode replica over TCP (docs/KV_OFFLOAD.md, "Prefill/decode
// disaggregation"). One connection carries one transfer:
//
//   sender -> receiver
//     8     magic "PGKVXF1\0"
//     4     transfer id length L (1..128), then L bytes of id
//     then frames, each a kind byte:
//       1 (block): u32 record length R, then R bytes: one block record
//                  (kv/block_file.h), in chain order
//       2 (end):   u32 number of block frames sent
//   receiver -> sender, once, after the end frame or at the first error
//     8     magic "PGKVAK1\0"
//     1     status (0 ok, 1 refused)
//     4     blocks kept, 4 blocks refused
//     2     message length M (<= 1024), then M bytes (an error's text)
// Integers little-endian. A receiver refuses a stream (error ack, then it
// closes) at the first malformed byte: bad magic or id, an unknown frame, a
// record longer than any its layout can have, a record that does not verify.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::kvtransfer {

inline constexpr char kStreamMagic[8] = {'P', 'G', 'K', 'V', 'X', 'F', '1', '\0'};
inline constexpr char kAckMagic[8] = {'P', 'G', 'K', 'V', 'A', 'K', '1', '\0'};
inline constexpr uint8_t kBlockFrame = 1;
inline constexpr uint8_t kEndFrame = 2;
inline constexpr uint32_t kMaxTransferIdBytes = 128;
inline constexpr uint16_t kMaxAckMessage = 1024;

// Where a stream's bytes come from (a socket with a deadline, or memory in
// tests and the fuzz target).
class ByteReader {
 public:
  virtual ~ByteReader() = default;
  // Exactly n bytes into dst, or an error (the peer closed: DataLoss-like
  // InvalidArgument "truncated"; a timeout: DeadlineExceeded).
  virtual Status ReadExact(void* dst, size_t n) = 0;
};

struct TransferAck {
  bool ok = false;
  uint32_t kept = 0;
  uint32_t refused = 0;
  std::string message;
};

void AppendStreamHeader(std::string_view transfer_id, std::vector<uint8_t>* out);
void AppendBlockFrameHeader(uint32_t record_bytes, std::vector<uint8_t>* out);
void AppendEndFrame(uint32_t n_blocks, std::vector<uint8_t>* out);
void AppendAck(const TransferAck& ack, std::vector<uint8_t>* out);
Result<TransferAck> ReadAck(ByteReader& in);

// Reads u32 / u8 little-endian through `in`.
Result<uint32_t> ReadU32(ByteReader& in);
Result<uint8_t> ReadU8(ByteReader& in);

// Whether `id` is a transfer id the stream may carry: 1..128 bytes of
// [A-Za-z0-9._-] (ids reach logs).
bool ValidTransferId(std::string_view id);

}  // namespace pagoda::kvtransfer
