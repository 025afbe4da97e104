// TransferInbox: what a decode replica does with the blocks a prefill
// replica sends (kvtransfer/transfer_protocol.h): each record is checked
// (header, checksum, that its hash is its parent and tokens hashed, and
// that it comes from a model this replica accepts), converted when it was
// written in another KV type (kv/block_convert.h: a prefill replica with
// f16 KV feeding a decode replica with FP8 KV), and kept in the engine's
// memory tier (kv/memory_tier.h), where the request that follows finds it
// as an offloaded prefix. No socket here: ReceiveStream reads through a
// ByteReader, so tests and the fuzz target drive it from memory.
// Thread-safe (the memory tier is; the scratch is per call).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "kv/block_file.h"
#include "kv/block_hash.h"
#include "kv/memory_tier.h"
#include "kvtransfer/transfer_protocol.h"

namespace pagoda::kvtransfer {

struct InboxStats {
  int64_t transfers = 0;  // streams that ended with an ok acknowledgement
  int64_t refused_transfers = 0;
  int64_t blocks = 0;     // blocks kept
  int64_t converted = 0;  // of which converted from another KV type
  int64_t refused = 0;    // records refused
  int64_t bytes = 0;      // record bytes received
  double seconds = 0;     // time spent receiving (first byte of the header to the ack)
};

class TransferInbox {
 public:
  // `accepted_fingerprints`: the model fingerprints whose blocks this
  // replica takes (its own, and the weights-only one a prefill replica with
  // other --decode-weights writes).
  TransferInbox(kv::MemoryTier& tier, std::vector<uint64_t> accepted_fingerprints);

  // The longest record any accepted writer can send (any KV type).
  int64_t max_record_bytes() const { return max_record_bytes_; }
  // One record: verified, converted if needed, kept. With `parent`, the
  // record must continue that block (a stream's blocks form one chain);
  // `hash` gets the record's hash. Errors: FailedPrecondition (another
  // model or layout), InvalidArgument / DataLoss (does not verify, or
  // breaks the chain).
  Status Accept(std::vector<uint8_t>&& record, const kv::BlockHash* parent = nullptr, kv::BlockHash* hash = nullptr);
  // Reads one whole stream (header, frames, end) and returns the
  // acknowledgement to send back; stops at the first error (refused ack).
  // `transfer_id` gets the stream's id when it was readable.
  TransferAck ReceiveStream(ByteReader& in, std::string* transfer_id = nullptr);
  InboxStats stats() const;

 private:
  kv::MemoryTier& tier_;
  std::vector<uint64_t> accepted_;
  int64_t max_record_bytes_ = 0;
  struct Counters {
    std::atomic<int64_t> transfers{0}, refused_transfers{0}, blocks{0}, converted{0}, refused{0}, bytes{0};
    std::atomic<int64_t> nanos{0};
  } counters_;
};

}  // namespace pagoda::kvtransfer
