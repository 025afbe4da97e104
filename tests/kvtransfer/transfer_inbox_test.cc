#include "kvtransfer/transfer_inbox.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kv/block_convert.h"
#include "kvtransfer/transfer_test_streams.h"

namespace pagoda::kvtransfer {
namespace {

using kernels::KvType;
using testing::ChainBlock;
using testing::kTestModel;
using testing::MakeChain;
using testing::MemoryReader;
using testing::Record;
using testing::Stream;
using testing::TestLayout;

constexpr uint64_t kWeightsOnly = 0x0000000077777777ULL;  // a second fingerprint the inbox accepts

class TransferInboxTest : public ::testing::Test {
 protected:
  void Open(const kv::BlockLayout& own, int64_t max_records = 64) {
    kv::MemoryTierOptions o;
    o.layout = own;
    o.max_bytes = max_records * own.RecordBytes();
    auto t = kv::MemoryTier::Open(o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tier_ = std::move(t).value();
    inbox_ = std::make_unique<TransferInbox>(*tier_, std::vector<uint64_t>{kTestModel, kWeightsOnly});
  }
  void SetUp() override { Open(TestLayout()); }

  TransferAck Receive(const std::vector<uint8_t>& stream, std::string* id = nullptr) {
    MemoryReader r(stream);
    return inbox_->ReceiveStream(r, id);
  }
  // The payload the tier holds for `b` (its parent and tokens checked too).
  std::vector<uint8_t> Held(const ChainBlock& b) {
    std::vector<uint8_t> out(static_cast<size_t>(tier_->layout().block_bytes), 0xEE);
    auto r = tier_->Get(b.hash, out.data());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) {
      EXPECT_EQ(r->parent, b.parent);
      EXPECT_EQ(r->tokens, b.tokens);
    }
    return out;
  }
  // A refused stream: the ack says so with a reason, and the inbox counts it.
  void ExpectRefused(const std::vector<uint8_t>& stream, const std::string& what) {
    const int64_t before = inbox_->stats().refused_transfers;
    const TransferAck ack = Receive(stream);
    EXPECT_FALSE(ack.ok) << what;
    EXPECT_FALSE(ack.message.empty()) << what;
    EXPECT_EQ(inbox_->stats().refused_transfers, before + 1) << what;
  }

  std::unique_ptr<kv::MemoryTier> tier_;
  std::unique_ptr<TransferInbox> inbox_;
};

// Where block i's record starts in a Stream() of `id`.
size_t RecordOffset(const kv::BlockLayout& l, size_t id_len, int i) {
  return 8 + 4 + id_len + static_cast<size_t>(i) * (5 + l.RecordBytes()) + 5;
}

TEST_F(TransferInboxTest, GoodStreamKeepsEveryBlockOfTheChain) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 5, 1, "tenant-a");
  std::string id;
  const TransferAck ack = Receive(Stream(l, chain, "req-42.prefill_0"), &id);
  EXPECT_TRUE(ack.ok) << ack.message;
  EXPECT_EQ(ack.kept, 5u);
  EXPECT_EQ(ack.refused, 0u);
  EXPECT_EQ(id, "req-42.prefill_0");
  for (const ChainBlock& b : chain) {
    EXPECT_TRUE(tier_->Contains(b.hash));
    EXPECT_EQ(Held(b), b.payload);
  }
  const InboxStats s = inbox_->stats();
  EXPECT_EQ(s.transfers, 1);
  EXPECT_EQ(s.refused_transfers, 0);
  EXPECT_EQ(s.blocks, 5);
  EXPECT_EQ(s.converted, 0);
  EXPECT_EQ(s.bytes, 5 * l.RecordBytes());
  EXPECT_GE(s.seconds, 0.0);
}

TEST_F(TransferInboxTest, StreamWithoutBlocksIsAcknowledged) {
  const TransferAck ack = Receive(Stream(TestLayout(), {}));
  EXPECT_TRUE(ack.ok) << ack.message;
  EXPECT_EQ(ack.kept, 0u);
  EXPECT_EQ(tier_->stats().blocks, 0);
}

TEST_F(TransferInboxTest, TheSameTransferTwiceIsAcknowledgedTwice) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 3);
  EXPECT_TRUE(Receive(Stream(l, chain)).ok);
  EXPECT_TRUE(Receive(Stream(l, chain)).ok);
  EXPECT_EQ(tier_->stats().blocks, 3);
  for (const ChainBlock& b : chain) EXPECT_EQ(Held(b), b.payload);
}

TEST_F(TransferInboxTest, MaxRecordBytesIsTheWidestKvTypes) {
  const kv::BlockLayout f32 = kv::LayoutWithType(TestLayout(), KvType::kF32, kTestModel);
  EXPECT_EQ(inbox_->max_record_bytes(), f32.RecordBytes());
}

TEST_F(TransferInboxTest, F16StreamIntoAnFp8TierIsConverted) {
  const kv::BlockLayout f16 = TestLayout(KvType::kF16);
  const kv::BlockLayout fp8 = kv::LayoutWithType(f16, KvType::kFp8E4M3, kTestModel);
  Open(fp8);
  const std::vector<ChainBlock> chain = MakeChain(f16, 4, 3);
  const TransferAck ack = Receive(Stream(f16, chain));
  ASSERT_TRUE(ack.ok) << ack.message;
  EXPECT_EQ(ack.kept, 4u);
  for (const ChainBlock& b : chain) {
    std::vector<uint8_t> want(static_cast<size_t>(fp8.block_bytes));
    ASSERT_TRUE(kv::ConvertBlockPayload(f16, b.payload.data(), fp8, want.data()).ok());
    EXPECT_EQ(Held(b), want);
  }
  EXPECT_EQ(inbox_->stats().converted, 4);
  EXPECT_EQ(inbox_->stats().blocks, 4);
}

TEST_F(TransferInboxTest, EveryKvTypeOfTheSameShapeIsConverted) {
  const kv::BlockLayout own = TestLayout(KvType::kF16);
  uint32_t seed = 10;
  for (KvType t : {KvType::kF32, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8}) {
    const kv::BlockLayout from = kv::LayoutWithType(own, t, kTestModel);
    const std::vector<ChainBlock> chain = MakeChain(from, 2, ++seed);
    const TransferAck ack = Receive(Stream(from, chain));
    ASSERT_TRUE(ack.ok) << kernels::KvTypeName(t) << ": " << ack.message;
    for (const ChainBlock& b : chain) {
      std::vector<uint8_t> want(static_cast<size_t>(own.block_bytes));
      ASSERT_TRUE(kv::ConvertBlockPayload(from, b.payload.data(), own, want.data()).ok());
      EXPECT_EQ(Held(b), want) << kernels::KvTypeName(t);
    }
  }
  EXPECT_EQ(inbox_->stats().converted, 8);
}

// A prefill replica with other --decode-weights writes the weights-only
// fingerprint: kept, under this replica's own.
TEST_F(TransferInboxTest, AcceptedSecondFingerprintIsKeptAsOwn) {
  const kv::BlockLayout theirs = TestLayout(KvType::kF16, kWeightsOnly);
  const std::vector<ChainBlock> chain = MakeChain(theirs, 2, 5);
  const TransferAck ack = Receive(Stream(theirs, chain));
  ASSERT_TRUE(ack.ok) << ack.message;
  for (const ChainBlock& b : chain) EXPECT_EQ(Held(b), b.payload);
  EXPECT_EQ(inbox_->stats().converted, 0);
}

TEST_F(TransferInboxTest, AcceptReportsWhyARecordIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const ChainBlock b = MakeChain(l, 1)[0];
  EXPECT_TRUE(inbox_->Accept(Record(l, b)).ok());

  const kv::BlockLayout other = TestLayout(KvType::kF16, kTestModel + 1);
  EXPECT_EQ(inbox_->Accept(Record(other, b)).code(), StatusCode::kFailedPrecondition);

  std::vector<uint8_t> flipped = Record(l, b);
  flipped[flipped.size() / 2] ^= 1;
  EXPECT_EQ(inbox_->Accept(std::move(flipped)).code(), StatusCode::kDataLoss);

  ChainBlock forged = b;
  forged.hash.lo ^= 1;
  EXPECT_EQ(inbox_->Accept(Record(l, forged)).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(tier_->Contains(forged.hash));

  std::vector<uint8_t> rec = Record(l, b);
  rec[0] ^= 0xff;  // magic
  EXPECT_EQ(inbox_->Accept(std::move(rec)).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(inbox_->Accept({}).code(), StatusCode::kOk);
}

TEST_F(TransferInboxTest, EveryTruncationIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<uint8_t> stream = Stream(l, MakeChain(l, 2), "t");
  for (size_t n = 0; n < stream.size(); ++n) {
    const std::vector<uint8_t> prefix(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(n));
    MemoryReader r(prefix);
    const TransferAck ack = inbox_->ReceiveStream(r);
    ASSERT_FALSE(ack.ok) << "prefix of " << n << " bytes";
    ASSERT_FALSE(ack.message.empty());
  }
  EXPECT_EQ(inbox_->stats().transfers, 0);
  EXPECT_EQ(inbox_->stats().refused_transfers, static_cast<int64_t>(stream.size()));
  EXPECT_TRUE(Receive(stream).ok);
}

TEST_F(TransferInboxTest, BadMagicIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 1);
  for (size_t i = 0; i < 8; ++i) {
    std::vector<uint8_t> s = Stream(l, chain);
    s[i] ^= 0x01;
    ExpectRefused(s, "magic byte " + std::to_string(i));
  }
  EXPECT_FALSE(tier_->Contains(chain[0].hash));
}

TEST_F(TransferInboxTest, BadTransferIdIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 1);
  ExpectRefused(Stream(l, chain, ""), "empty id");
  ExpectRefused(Stream(l, chain, std::string(129, 'a')), "id of 129 bytes");
  ExpectRefused(Stream(l, chain, "a b"), "space");
  ExpectRefused(Stream(l, chain, "../etc"), "slash");
  ExpectRefused(Stream(l, chain, std::string("a\0b", 3)), "NUL");
  ExpectRefused(Stream(l, chain, "x\n"), "newline");
  // An id length of 2^32 - 1 is refused before anything is read for it.
  std::vector<uint8_t> s(kStreamMagic, kStreamMagic + 8);
  for (int i = 0; i < 4; ++i) s.push_back(0xff);
  s.insert(s.end(), 64, 'a');
  MemoryReader r(s);
  EXPECT_FALSE(inbox_->ReceiveStream(r).ok);
  EXPECT_LE(r.largest_read(), 8u);
  EXPECT_FALSE(tier_->Contains(chain[0].hash));
  // The longest id is fine.
  EXPECT_TRUE(Receive(Stream(l, chain, std::string(128, 'Z'))).ok);
}

TEST_F(TransferInboxTest, FlippedChecksumStopsTheStreamAtThatBlock) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 3);
  std::vector<uint8_t> s = Stream(l, chain, "t");
  // The second record's checksum (its last 8 bytes).
  s[RecordOffset(l, 1, 1) + static_cast<size_t>(l.RecordBytes()) - 1] ^= 0x40;
  const TransferAck ack = Receive(s);
  EXPECT_FALSE(ack.ok);
  EXPECT_EQ(ack.kept, 1u);
  EXPECT_EQ(ack.refused, 1u);
  EXPECT_TRUE(tier_->Contains(chain[0].hash));
  EXPECT_FALSE(tier_->Contains(chain[1].hash));
  EXPECT_FALSE(tier_->Contains(chain[2].hash));
  EXPECT_EQ(inbox_->stats().refused, 1);
}

TEST_F(TransferInboxTest, FlippedPayloadByteIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 1);
  std::vector<uint8_t> s = Stream(l, chain, "t");
  s[RecordOffset(l, 1, 0) + 96 + 4 * 4 + 3] ^= 0x01;
  ExpectRefused(s, "payload byte");
  EXPECT_FALSE(tier_->Contains(chain[0].hash));
}

TEST_F(TransferInboxTest, AnotherModelIsRefused) {
  const kv::BlockLayout theirs = TestLayout(KvType::kF16, kTestModel ^ 0xff);
  const std::vector<ChainBlock> chain = MakeChain(theirs, 2);
  const TransferAck ack = Receive(Stream(theirs, chain));
  EXPECT_FALSE(ack.ok);
  EXPECT_EQ(ack.kept, 0u);
  EXPECT_EQ(ack.refused, 1u);
  for (const ChainBlock& b : chain) EXPECT_FALSE(tier_->Contains(b.hash));
}

TEST_F(TransferInboxTest, AnotherShapeIsRefused) {
  // Same KV type and record size (the head count does not change f16
  // bytes), another layout hash.
  kv::BlockLayout heads = TestLayout();
  heads.layers = {{8, 8, 1}, {8, 8, 1}};
  ASSERT_EQ(heads.block_bytes, TestLayout().block_bytes);
  kv::BlockLayout wider = TestLayout();
  wider.layers = {{16, 16, 2}, {8, 8, 2}};
  wider = kv::LayoutWithType(wider, KvType::kF16, kTestModel);
  kv::BlockLayout longer = TestLayout();
  longer.block_size = 8;
  longer = kv::LayoutWithType(longer, KvType::kF16, kTestModel);
  for (const kv::BlockLayout& other : {heads, wider, longer}) {
    const std::vector<ChainBlock> chain = MakeChain(other, 1);
    ExpectRefused(Stream(other, chain), "another shape");
    EXPECT_FALSE(tier_->Contains(chain[0].hash));
  }
}

TEST_F(TransferInboxTest, HugeRecordLengthIsRefusedWithoutReadingIt) {
  for (uint32_t len : {0xFFFFFFFFu, static_cast<uint32_t>(inbox_->max_record_bytes() + 1), 0u, 95u}) {
    std::vector<uint8_t> s;
    AppendStreamHeader("t", &s);
    AppendBlockFrameHeader(len, &s);
    s.insert(s.end(), 4096, 0);
    MemoryReader r(s);
    const TransferAck ack = inbox_->ReceiveStream(r);
    EXPECT_FALSE(ack.ok) << len;
    EXPECT_LE(r.largest_read(), 8u) << len << ": the record was read (or allocated)";
  }
}

TEST_F(TransferInboxTest, RecordLengthOtherThanTheRecordIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const ChainBlock b = MakeChain(l, 1)[0];
  const std::vector<uint8_t> rec = Record(l, b);
  for (int64_t delta : {-1, 1, -8}) {
    std::vector<uint8_t> s;
    AppendStreamHeader("t", &s);
    AppendBlockFrameHeader(static_cast<uint32_t>(static_cast<int64_t>(rec.size()) + delta), &s);
    s.insert(s.end(), rec.begin(), rec.end());
    s.push_back(0);
    AppendEndFrame(1, &s);
    ExpectRefused(s, "length off by " + std::to_string(delta));
  }
  EXPECT_FALSE(tier_->Contains(b.hash));
}

TEST_F(TransferInboxTest, EndFrameCountingOtherBlocksIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 2);
  for (uint32_t count : {0u, 1u, 3u, 0xFFFFFFFFu}) {
    std::vector<uint8_t> s = Stream(l, chain);
    s.resize(s.size() - 5);
    AppendEndFrame(count, &s);
    const TransferAck ack = Receive(s);
    EXPECT_FALSE(ack.ok) << count;
  }
}

TEST_F(TransferInboxTest, UnknownFrameKindIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 1);
  for (uint8_t kind : {uint8_t{0}, uint8_t{3}, uint8_t{0x81}, uint8_t{0xff}}) {
    std::vector<uint8_t> s = Stream(l, chain, "t");
    s[8 + 4 + 1] = kind;  // the first frame's kind
    ExpectRefused(s, "kind " + std::to_string(kind));
    // After a good block, in the end frame's place.
    s = Stream(l, chain, "t");
    s[s.size() - 5] = kind;
    ExpectRefused(s, "end kind " + std::to_string(kind));
  }
}

TEST_F(TransferInboxTest, BlockWhoseHashIsNotItsParentAndTokensIsRefused) {
  const kv::BlockLayout l = TestLayout();
  std::vector<ChainBlock> chain = MakeChain(l, 3, 9, "salt");
  ChainBlock bad_tokens = chain[1];
  bad_tokens.tokens[2] += 1;  // the record's tokens are not what was hashed
  ChainBlock bad_parent = chain[1];
  bad_parent.parent = chain[1].hash;
  ChainBlock bad_hash = chain[2];
  bad_hash.hash.hi ^= 0x8000000000000000ULL;
  for (const ChainBlock& bad : {bad_tokens, bad_parent, bad_hash}) {
    const TransferAck ack = Receive(Stream(l, {chain[0], bad}));
    EXPECT_FALSE(ack.ok);
    EXPECT_EQ(ack.kept, 1u);
    EXPECT_FALSE(tier_->Contains(bad.hash));
  }
  // The salt is in the root: the same tokens after another root are another chain.
  const std::vector<ChainBlock> unsalted = MakeChain(l, 1, 9, "");
  EXPECT_EQ(unsalted[0].tokens, chain[0].tokens);
  EXPECT_NE(unsalted[0].hash, chain[0].hash);
}

TEST_F(TransferInboxTest, ABlockThatDoesNotContinueThePreviousOneIsRefused) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> a = MakeChain(l, 2, 9, "salt");
  const std::vector<ChainBlock> b = MakeChain(l, 2, 10, "salt");
  // b[1] is a valid record of its own chain, but not a continuation of a[0].
  const TransferAck ack = Receive(Stream(l, {a[0], b[1]}));
  EXPECT_FALSE(ack.ok);
  EXPECT_EQ(ack.kept, 1u);
  EXPECT_FALSE(tier_->Contains(b[1].hash));
  // Each chain alone is fine.
  EXPECT_TRUE(Receive(Stream(l, a)).ok);
  EXPECT_TRUE(Receive(Stream(l, b)).ok);
}

TEST_F(TransferInboxTest, AStreamLargerThanTheTierKeepsTheLatestBlocks) {
  const kv::BlockLayout l = TestLayout();
  Open(l, /*max_records=*/2);
  const std::vector<ChainBlock> chain = MakeChain(l, 5);
  const TransferAck ack = Receive(Stream(l, chain));
  EXPECT_TRUE(ack.ok) << ack.message;
  EXPECT_EQ(ack.kept, 5u);
  EXPECT_FALSE(tier_->Contains(chain[2].hash));
  EXPECT_EQ(Held(chain[3]), chain[3].payload);
  EXPECT_EQ(Held(chain[4]), chain[4].payload);
}

}  // namespace
}  // namespace pagoda::kvtransfer
