#include "kvtransfer/transfer_protocol.h"

#include <bit>
#include <cstring>

namespace pagoda::kvtransfer {

static_assert(std::endian::native == std::endian::little, "the transfer stream is little-endian");

namespace {

template <class T>
void Append(std::vector<uint8_t>* out, T v) {
  const size_t at = out->size();
  out->resize(at + sizeof(v));
  std::memcpy(out->data() + at, &v, sizeof(v));
}

void AppendBytes(std::vector<uint8_t>* out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out->insert(out->end(), b, b + n);
}

}  // namespace

bool ValidTransferId(std::string_view id) {
  if (id.empty() || id.size() > kMaxTransferIdBytes) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void AppendStreamHeader(std::string_view transfer_id, std::vector<uint8_t>* out) {
  AppendBytes(out, kStreamMagic, sizeof(kStreamMagic));
  Append(out, static_cast<uint32_t>(transfer_id.size()));
  AppendBytes(out, transfer_id.data(), transfer_id.size());
}

void AppendBlockFrameHeader(uint32_t record_bytes, std::vector<uint8_t>* out) {
  Append(out, kBlockFrame);
  Append(out, record_bytes);
}

void AppendEndFrame(uint32_t n_blocks, std::vector<uint8_t>* out) {
  Append(out, kEndFrame);
  Append(out, n_blocks);
}

void AppendAck(const TransferAck& ack, std::vector<uint8_t>* out) {
  AppendBytes(out, kAckMagic, sizeof(kAckMagic));
  Append(out, static_cast<uint8_t>(ack.ok ? 0 : 1));
  Append(out, ack.kept);
  Append(out, ack.refused);
  const size_t m = std::min<size_t>(ack.message.size(), kMaxAckMessage);
  Append(out, static_cast<uint16_t>(m));
  AppendBytes(out, ack.message.data(), m);
}

Result<uint32_t> ReadU32(ByteReader& in) {
  uint32_t v = 0;
  PAGODA_RETURN_IF_ERROR(in.ReadExact(&v, sizeof(v)));
  return v;
}

Result<uint8_t> ReadU8(ByteReader& in) {
  uint8_t v = 0;
  PAGODA_RETURN_IF_ERROR(in.ReadExact(&v, 1));
  return v;
}

Result<TransferAck> ReadAck(ByteReader& in) {
  char magic[8];
  PAGODA_RETURN_IF_ERROR(in.ReadExact(magic, sizeof(magic)));
  if (std::memcmp(magic, kAckMagic, sizeof(magic)) != 0) return InvalidArgument("KV transfer: bad acknowledgement");
  PAGODA_ASSIGN_OR_RETURN(const uint8_t status, ReadU8(in));
  if (status > 1) return InvalidArgument("KV transfer: bad acknowledgement status");
  TransferAck ack;
  ack.ok = status == 0;
  PAGODA_ASSIGN_OR_RETURN(ack.kept, ReadU32(in));
  PAGODA_ASSIGN_OR_RETURN(ack.refused, ReadU32(in));
  uint16_t m = 0;
  PAGODA_RETURN_IF_ERROR(in.ReadExact(&m, sizeof(m)));
  if (m > kMaxAckMessage) return InvalidArgument("KV transfer: acknowledgement message too long");
  ack.message.resize(m);
  if (m > 0) PAGODA_RETURN_IF_ERROR(in.ReadExact(ack.message.data(), m));
  return ack;
}

}  // namespace pagoda::kvtransfer
