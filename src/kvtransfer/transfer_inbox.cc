#include "kvtransfer/transfer_inbox.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "kv/block_convert.h"
#include "kv/block_hash.h"

namespace pagoda::kvtransfer {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

TransferInbox::TransferInbox(kv::MemoryTier& tier, std::vector<uint64_t> accepted_fingerprints)
    : tier_(tier), accepted_(std::move(accepted_fingerprints)) {
  for (kernels::KvType t : {kernels::KvType::kF32, kernels::KvType::kF16, kernels::KvType::kBf16,
                            kernels::KvType::kFp8E4M3, kernels::KvType::kInt8}) {
    const kv::BlockLayout l = kv::LayoutWithType(tier_.layout(), t, 0);
    if (l.block_bytes > 0) max_record_bytes_ = std::max(max_record_bytes_, l.RecordBytes());
  }
}

Status TransferInbox::Accept(std::vector<uint8_t>&& record, const kv::BlockHash* parent, kv::BlockHash* hash) {
  const kv::BlockLayout& own = tier_.layout();
  PAGODA_ASSIGN_OR_RETURN(const kv::BlockOrigin origin, kv::PeekBlockOrigin(record));
  if (std::find(accepted_.begin(), accepted_.end(), origin.model_fingerprint) == accepted_.end()) {
    return FailedPrecondition("KV transfer: a block of another model (fingerprint mismatch)");
  }
  const kv::BlockLayout from = kv::LayoutWithType(own, origin.type, origin.model_fingerprint);
  if (from.block_bytes == 0 || origin.record_bytes != from.RecordBytes() ||
      static_cast<int64_t>(record.size()) != from.RecordBytes()) {
    return FailedPrecondition("KV transfer: a block of another KV layout");
  }
  // Verified as its writer wrote it (header against the writer's layout, checksum).
  PAGODA_ASSIGN_OR_RETURN(const kv::BlockRecord rec, kv::VerifyBlock(from, record));
  kv::BlockHasher hasher(own.block_size);
  if (hasher.Next(rec.parent, rec.tokens) != rec.hash) {
    return InvalidArgument("KV transfer: a block whose hash is not its parent and tokens hashed");
  }
  if (parent != nullptr && rec.parent != *parent) {
    return InvalidArgument("KV transfer: a block that does not continue the previous one");
  }
  if (hash != nullptr) *hash = rec.hash;
  if (from.type == own.type && from.model_fingerprint == own.model_fingerprint) {
    return tier_.Insert(std::move(record));  // the common case: kept as received
  }
  std::vector<uint8_t> converted(static_cast<size_t>(own.block_bytes));
  const uint8_t* payload = record.data() + kv::kBlockFileFixedHeader + 4 * int64_t{own.block_size};
  PAGODA_RETURN_IF_ERROR(kv::ConvertBlockPayload(from, payload, own, converted.data()));
  tier_.Put(rec.hash, rec.parent, rec.tokens, converted.data());  // false: held already, fine
  if (from.type != own.type) counters_.converted.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

TransferAck TransferInbox::ReceiveStream(ByteReader& in, std::string* transfer_id) {
  const auto start = Clock::now();
  TransferAck ack;
  auto fail = [&](const Status& st) {
    ack.ok = false;
    ack.message = st.ToString();
    counters_.refused_transfers.fetch_add(1, std::memory_order_relaxed);
    counters_.nanos.fetch_add(std::chrono::nanoseconds(Clock::now() - start).count(), std::memory_order_relaxed);
    return ack;
  };
  char magic[8];
  if (Status st = in.ReadExact(magic, sizeof(magic)); !st.ok()) return fail(st);
  if (std::memcmp(magic, kStreamMagic, sizeof(magic)) != 0) return fail(InvalidArgument("KV transfer: bad magic"));
  Result<uint32_t> id_len = ReadU32(in);
  if (!id_len.ok()) return fail(id_len.status());
  if (*id_len < 1 || *id_len > kMaxTransferIdBytes) return fail(InvalidArgument("KV transfer: bad transfer id length"));
  std::string id(*id_len, '\0');
  if (Status st = in.ReadExact(id.data(), id.size()); !st.ok()) return fail(st);
  if (!ValidTransferId(id)) return fail(InvalidArgument("KV transfer: bad transfer id"));
  if (transfer_id != nullptr) *transfer_id = id;
  uint32_t frames = 0;
  kv::BlockHash previous;
  for (;;) {
    Result<uint8_t> kind = ReadU8(in);
    if (!kind.ok()) return fail(kind.status());
    Result<uint32_t> n = ReadU32(in);
    if (!n.ok()) return fail(n.status());
    if (*kind == kEndFrame) {
      if (*n != frames) return fail(InvalidArgument("KV transfer: the end frame counts another number of blocks"));
      break;
    }
    if (*kind != kBlockFrame) return fail(InvalidArgument("KV transfer: unknown frame kind"));
    if (*n < kv::kBlockFileFixedHeader || int64_t{*n} > max_record_bytes_) {
      return fail(InvalidArgument("KV transfer: a block record of " + std::to_string(*n) + " bytes (at most " +
                                  std::to_string(max_record_bytes_) + ")"));
    }
    std::vector<uint8_t> record(*n);
    if (Status st = in.ReadExact(record.data(), record.size()); !st.ok()) return fail(st);
    ++frames;
    counters_.bytes.fetch_add(*n, std::memory_order_relaxed);
    if (Status st = Accept(std::move(record), frames > 1 ? &previous : nullptr, &previous); !st.ok()) {
      ++ack.refused;
      counters_.refused.fetch_add(1, std::memory_order_relaxed);
      return fail(st);
    }
    ++ack.kept;
    counters_.blocks.fetch_add(1, std::memory_order_relaxed);
  }
  ack.ok = true;
  counters_.transfers.fetch_add(1, std::memory_order_relaxed);
  counters_.nanos.fetch_add(std::chrono::nanoseconds(Clock::now() - start).count(), std::memory_order_relaxed);
  return ack;
}

InboxStats TransferInbox::stats() const {
  InboxStats s;
  s.transfers = counters_.transfers.load();
  s.refused_transfers = counters_.refused_transfers.load();
  s.blocks = counters_.blocks.load();
  s.converted = counters_.converted.load();
  s.refused = counters_.refused.load();
  s.bytes = counters_.bytes.load();
  s.seconds = static_cast<double>(counters_.nanos.load()) * 1e-9;
  return s;
}

}  // namespace pagoda::kvtransfer
