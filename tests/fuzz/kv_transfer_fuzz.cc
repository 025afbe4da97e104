// libFuzzer target: TransferInbox::ReceiveStream (kvtransfer/transfer_inbox.h)
// on arbitrary bytes, read from memory into a small memory tier (f16, two
// layers, the second without V). It must return an acknowledgement (never
// crash, read out of bounds or allocate by a length field: no single read
// is longer than the longest record the inbox takes), and whatever it kept
// must verify and be its parent and tokens hashed. Built with clang under
// ASan+UBSan with src/kv's block format, memory tier and KV type conversion
// and the kernels they convert rows with.
//
// The first input byte picks the case. Bit 0 clear: the rest of the input
// is the stream. Bit 0 set: a valid stream of a chain of blocks is built
// (bits 1-2: 1..4 blocks; bits 3-5: the writer's KV type, f16 f32 bf16 fp8
// int8, so conversion runs; bit 7: the weights-only fingerprint) and the
// bytes from the fourth on are XORed in at the offset in bytes 1-2 (byte 3
// 0xff: then truncated there); bit 6 recomputes every record's checksum so
// mutations reach the checks behind it. An unmutated built stream must be
// acknowledged with every block kept, converted as ConvertBlockPayload does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <xxhash.h>

#include "kv/block_convert.h"
#include "kv/memory_tier.h"
#include "kv_transfer_fuzz_streams.h"
#include "kvtransfer/transfer_inbox.h"

namespace pagoda::kvtransfer::fuzzing {
namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

struct Built {
  std::vector<uint8_t> stream;
  kv::BlockLayout writer;
  std::vector<testing::ChainBlock> chain;  // the blocks in the stream
  bool mutated = false;
};

Built Build(const uint8_t* data, size_t size) {
  Built b;
  const uint8_t mode = data[0];
  const int n = ((mode >> 1) & 3) + 1;
  b.writer = WriterLayout((mode >> 3) & 7, (mode & 0x80) != 0);
  b.chain = WriterChain(b.writer);
  b.chain.resize(static_cast<size_t>(n));
  b.stream = testing::Stream(b.writer, b.chain, "fuzz-1");
  const size_t at = size > 2 ? ((size_t{data[1]} << 8) | data[2]) % b.stream.size() : 0;
  for (size_t i = 3; i < size && at + i - 3 < b.stream.size(); ++i) {
    b.stream[at + i - 3] ^= data[i];
    b.mutated |= data[i] != 0;
  }
  if (size > 3 && data[3] == 0xff) {
    b.stream.resize(at);
    b.mutated = true;
  }
  if (mode & 0x40) {
    // Record i starts after the header (8 + 4 + 6 bytes) and i frames.
    const size_t rec = static_cast<size_t>(b.writer.RecordBytes());
    for (int i = 0; i < n; ++i) {
      const size_t start = 18 + static_cast<size_t>(i) * (5 + rec) + 5;
      if (start + rec > b.stream.size()) break;
      const uint64_t sum = XXH3_64bits(b.stream.data() + start, rec - 8);
      std::memcpy(b.stream.data() + start + rec - 8, &sum, 8);
    }
  }
  return b;
}

}  // namespace
}  // namespace pagoda::kvtransfer::fuzzing

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda;
  using namespace pagoda::kvtransfer;
  using namespace pagoda::kvtransfer::fuzzing;
  static const kv::BlockLayout own = OwnLayout();
  kv::MemoryTierOptions o;
  o.layout = own;
  o.max_bytes = kMaxBlocks * own.RecordBytes();
  std::unique_ptr<kv::MemoryTier> tier = std::move(kv::MemoryTier::Open(o)).value();
  TransferInbox inbox(*tier, {kModel, kWeightsOnly});

  const bool built = size > 0 && (data[0] & 1) != 0;
  Built b;
  std::vector<uint8_t> raw;
  if (built) {
    b = Build(data, size);
  } else if (size > 1) {
    raw.assign(data + 1, data + size);
  }
  const std::vector<uint8_t>& stream = built ? b.stream : raw;
  testing::MemoryReader reader(stream);
  std::string id;
  const TransferAck ack = inbox.ReceiveStream(reader, &id);

  // Never a read (so never an allocation) longer than a record can be.
  Check(static_cast<int64_t>(reader.largest_read()) <= std::max<int64_t>(inbox.max_record_bytes(), 8));
  Check(reader.consumed() <= stream.size());
  Check(ack.refused <= 1);
  Check(ack.ok == (ack.refused == 0 && ack.message.empty()));
  Check(tier->stats().blocks <= static_cast<int64_t>(ack.kept));
  if (ack.ok) Check(ValidTransferId(id));
  const InboxStats s = inbox.stats();
  Check(s.transfers + s.refused_transfers == 1);
  Check(s.blocks == static_cast<int64_t>(ack.kept));
  std::vector<uint8_t> acked;
  AppendAck(ack, &acked);
  testing::MemoryReader ack_reader(acked);
  Check(ReadAck(ack_reader).ok());
  if (!built) return 0;

  // Whatever was kept verifies, and is its parent and tokens hashed.
  std::vector<uint8_t> payload(static_cast<size_t>(own.block_bytes));
  kv::BlockHasher hasher(own.block_size);
  for (const testing::ChainBlock& c : b.chain) {
    if (!tier->Contains(c.hash)) continue;
    Result<kv::BlockRecord> r = tier->Get(c.hash, payload.data());
    Check(r.ok());
    Check(r.value().hash == c.hash);
    Check(hasher.Next(r.value().parent, r.value().tokens) == c.hash);
  }
  if (b.mutated) return 0;
  // Unmutated: every block kept, as converting its payload gives.
  Check(ack.ok);
  Check(ack.kept == b.chain.size());
  Check(id == "fuzz-1");
  std::vector<uint8_t> want(static_cast<size_t>(own.block_bytes));
  for (const testing::ChainBlock& c : b.chain) {
    Check(kv::ConvertBlockPayload(b.writer, c.payload.data(), own, want.data()).ok());
    Result<kv::BlockRecord> r = tier->Get(c.hash, payload.data());
    Check(r.ok());
    Check(payload == want);
    Check(r.value().parent == c.parent && r.value().tokens == c.tokens);
  }
  return 0;
}
