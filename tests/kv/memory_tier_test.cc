#include "kv/memory_tier.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kv/tier_event.h"
#include "kv/tier_test_blocks.h"

namespace pagoda::kv {
namespace {

using kernels::KvType;

constexpr uint64_t kModel = testing::kTestModel;

BlockLayout Layout(uint64_t fingerprint = kModel, KvType type = KvType::kF16) {
  return testing::TestLayout(fingerprint, type);
}
using Block = testing::TestBlock;
Block MakeBlock(const BlockLayout& l, uint64_t id) { return testing::MakeTestBlock(l, id); }

std::unique_ptr<MemoryTier> Open(int64_t max_bytes, const BlockLayout& l = Layout()) {
  MemoryTierOptions o;
  o.layout = l;
  o.max_bytes = max_bytes;
  auto t = MemoryTier::Open(o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

bool Put(MemoryTier& t, const Block& b) { return t.Put(b.hash, b.parent, b.tokens, b.payload.data()); }

std::vector<uint8_t> Record(const BlockLayout& l, const Block& b) {
  std::vector<uint8_t> rec;
  EncodeBlock(l, b.hash, b.parent, b.tokens, b.payload.data(), &rec);
  return rec;
}

void ExpectGet(MemoryTier& t, const Block& b) {
  std::vector<uint8_t> out(t.layout().block_bytes, 0);
  auto r = t.Get(b.hash, out.data());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(out, b.payload);
  EXPECT_EQ(r->hash, b.hash);
  EXPECT_EQ(r->parent, b.parent);
  EXPECT_EQ(r->tokens, b.tokens);
}

std::vector<BlockHash> TakeRemoved(MemoryTier& t) {
  std::vector<BlockHash> out;
  t.TakeRemoved(&out);
  return out;
}

TEST(MemoryTierTest, PutThenGetRoundTripsBitwise) {
  const BlockLayout l = Layout();
  auto t = Open(10 * l.RecordBytes());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->name(), "memory");
  EXPECT_EQ(MediumOfTier(t->name()), kMediumCpu);
  const Block b = MakeBlock(l, 1);
  EXPECT_TRUE(Put(*t, b));
  ExpectGet(*t, b);
  const KvTierStats s = t->stats();
  EXPECT_EQ(s.blocks, 1);
  EXPECT_EQ(s.bytes, l.RecordBytes());
  EXPECT_EQ(s.writes, 1);
  EXPECT_EQ(s.write_bytes, l.RecordBytes());
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.read_bytes, l.RecordBytes());
  EXPECT_EQ(s.deleted, 0);
  // A second Put of the same hash keeps the first.
  Block again = MakeBlock(l, 1);
  again.payload[0] ^= 0xff;
  EXPECT_FALSE(Put(*t, again));
  EXPECT_EQ(t->stats().dropped, 1);
  EXPECT_EQ(t->stats().blocks, 1);
  ExpectGet(*t, b);
}

TEST(MemoryTierTest, ContainsOnlyWhatItHolds) {
  const BlockLayout l = Layout();
  auto t = Open(10 * l.RecordBytes());
  ASSERT_TRUE(t);
  const Block a = MakeBlock(l, 1), b = MakeBlock(l, 2);
  EXPECT_FALSE(t->Contains(a.hash));
  EXPECT_TRUE(Put(*t, a));
  EXPECT_TRUE(t->Contains(a.hash));
  EXPECT_FALSE(t->Contains(b.hash));
  EXPECT_FALSE(t->Contains(a.parent));
}

TEST(MemoryTierTest, MissIsNotFoundAndLeavesPayloadAlone) {
  const BlockLayout l = Layout();
  auto t = Open(l.RecordBytes());
  ASSERT_TRUE(t);
  std::vector<uint8_t> out(l.block_bytes, 0xEE);
  EXPECT_EQ(t->Get(BlockHash{1, 2}, out.data()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(out, std::vector<uint8_t>(l.block_bytes, 0xEE));
  EXPECT_EQ(t->stats().misses, 1);
}

TEST(MemoryTierTest, EvictsLeastRecentlyUsedPastTheByteBound) {
  const BlockLayout l = Layout();
  // Three records and most of a fourth: the fourth does not fit.
  auto t = Open(4 * l.RecordBytes() - 1);
  ASSERT_TRUE(t);
  std::vector<Block> b;
  for (uint64_t i = 0; i < 6; ++i) b.push_back(MakeBlock(l, i + 1));
  EXPECT_TRUE(Put(*t, b[0]));
  EXPECT_TRUE(Put(*t, b[1]));
  EXPECT_TRUE(Put(*t, b[2]));
  EXPECT_TRUE(TakeRemoved(*t).empty());
  ExpectGet(*t, b[0]);  // b[0] most recent now: b[1] is the oldest
  EXPECT_TRUE(Put(*t, b[3]));
  EXPECT_FALSE(t->Contains(b[1].hash));
  for (int i : {0, 2, 3}) EXPECT_TRUE(t->Contains(b[i].hash)) << i;
  EXPECT_EQ(TakeRemoved(*t), std::vector<BlockHash>{b[1].hash});
  EXPECT_TRUE(TakeRemoved(*t).empty()) << "taken once";
  // Contains does not refresh: b[2] goes next, then b[0].
  EXPECT_TRUE(t->Contains(b[2].hash));
  EXPECT_TRUE(Put(*t, b[4]));
  EXPECT_TRUE(Put(*t, b[5]));
  EXPECT_EQ(TakeRemoved(*t), (std::vector<BlockHash>{b[2].hash, b[0].hash}));
  for (int i : {3, 4, 5}) ExpectGet(*t, b[i]);
  std::vector<uint8_t> out(l.block_bytes);
  EXPECT_EQ(t->Get(b[1].hash, out.data()).status().code(), StatusCode::kNotFound);
  const KvTierStats s = t->stats();
  EXPECT_EQ(s.blocks, 3);
  EXPECT_EQ(s.bytes, 3 * l.RecordBytes());
  EXPECT_EQ(s.deleted, 3);
  EXPECT_EQ(s.writes, 6);
}

TEST(MemoryTierTest, ABoundOfOneRecordKeepsTheLatest) {
  const BlockLayout l = Layout();
  auto t = Open(l.RecordBytes());
  ASSERT_TRUE(t);
  const Block a = MakeBlock(l, 1), b = MakeBlock(l, 2);
  EXPECT_TRUE(Put(*t, a));
  EXPECT_TRUE(Put(*t, b));
  EXPECT_FALSE(t->Contains(a.hash));
  ExpectGet(*t, b);
  EXPECT_EQ(TakeRemoved(*t), std::vector<BlockHash>{a.hash});
}

TEST(MemoryTierTest, InsertKeepsAValidRecord) {
  const BlockLayout l = Layout();
  auto t = Open(10 * l.RecordBytes());
  ASSERT_TRUE(t);
  const Block b = MakeBlock(l, 7);
  ASSERT_TRUE(t->Insert(Record(l, b)).ok());
  EXPECT_TRUE(t->Contains(b.hash));
  ExpectGet(*t, b);
  EXPECT_EQ(t->stats().blocks, 1);
  EXPECT_EQ(t->stats().bytes, l.RecordBytes());
  // Put of the same hash afterwards: held already.
  EXPECT_FALSE(Put(*t, b));
}

TEST(MemoryTierTest, InsertOfTheSameHashReplacesWithoutReportingARemoval) {
  const BlockLayout l = Layout();
  auto t = Open(10 * l.RecordBytes());
  ASSERT_TRUE(t);
  const Block a = MakeBlock(l, 7);
  Block a2 = a;
  for (uint8_t& x : a2.payload) x = static_cast<uint8_t>(x + 1);
  ASSERT_TRUE(t->Insert(Record(l, a)).ok());
  ASSERT_TRUE(t->Insert(Record(l, a2)).ok());
  ExpectGet(*t, a2);
  EXPECT_EQ(t->stats().blocks, 1);
  EXPECT_EQ(t->stats().bytes, l.RecordBytes());
  EXPECT_TRUE(TakeRemoved(*t).empty());
}

TEST(MemoryTierTest, InsertEvictsLikePut) {
  const BlockLayout l = Layout();
  auto t = Open(2 * l.RecordBytes());
  ASSERT_TRUE(t);
  const Block a = MakeBlock(l, 1), b = MakeBlock(l, 2), c = MakeBlock(l, 3);
  ASSERT_TRUE(t->Insert(Record(l, a)).ok());
  EXPECT_TRUE(Put(*t, b));
  ASSERT_TRUE(t->Insert(Record(l, c)).ok());
  EXPECT_FALSE(t->Contains(a.hash));
  EXPECT_EQ(TakeRemoved(*t), std::vector<BlockHash>{a.hash});
}

TEST(MemoryTierTest, InsertOfACorruptRecordIsDataLossAndKeepsNothing) {
  const BlockLayout l = Layout();
  auto t = Open(10 * l.RecordBytes());
  ASSERT_TRUE(t);
  const Block b = MakeBlock(l, 3);
  const size_t payload_at = kBlockFileFixedHeader + 4 * l.block_size;
  for (size_t at : {payload_at, payload_at + 17, static_cast<size_t>(l.RecordBytes() - 9)}) {
    std::vector<uint8_t> rec = Record(l, b);
    rec[at] ^= 0x20;
    EXPECT_EQ(t->Insert(std::move(rec)).code(), StatusCode::kDataLoss) << at;
  }
  std::vector<uint8_t> rec = Record(l, b);
  rec[rec.size() - 1] ^= 1;  // the checksum itself
  EXPECT_EQ(t->Insert(std::move(rec)).code(), StatusCode::kDataLoss);
  EXPECT_FALSE(t->Contains(b.hash));
  EXPECT_EQ(t->stats().blocks, 0);
  EXPECT_EQ(t->stats().bytes, 0);
}

TEST(MemoryTierTest, InsertOfAnotherModelIsFailedPrecondition) {
  const BlockLayout l = Layout();
  auto t = Open(10 * l.RecordBytes());
  ASSERT_TRUE(t);
  const BlockLayout other = Layout(kModel + 1);
  const Block b = MakeBlock(other, 3);
  EXPECT_EQ(t->Insert(Record(other, b)).code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(t->Contains(b.hash));
  EXPECT_EQ(t->stats().blocks, 0);
}

TEST(MemoryTierTest, InsertOfAWrongSizedRecordIsRefused) {
  const BlockLayout l = Layout();
  auto t = Open(10 * l.RecordBytes());
  ASSERT_TRUE(t);
  const Block b = MakeBlock(l, 3);
  std::vector<uint8_t> shorter = Record(l, b);
  shorter.pop_back();
  EXPECT_EQ(t->Insert(std::move(shorter)).code(), StatusCode::kInvalidArgument);
  std::vector<uint8_t> longer = Record(l, b);
  longer.push_back(0);
  EXPECT_EQ(t->Insert(std::move(longer)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Insert({}).code(), StatusCode::kInvalidArgument);
  // Another KV type: another record size.
  const BlockLayout int8 = Layout(kModel, KvType::kInt8);
  EXPECT_NE(t->Insert(Record(int8, MakeBlock(int8, 3))).code(), StatusCode::kOk);
  EXPECT_EQ(t->stats().blocks, 0);
}

TEST(MemoryTierTest, OpenRefusesABoundBelowOneRecord) {
  const BlockLayout l = Layout();
  MemoryTierOptions o;
  o.layout = l;
  o.max_bytes = l.RecordBytes() - 1;
  EXPECT_EQ(MemoryTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o.max_bytes = 0;
  EXPECT_EQ(MemoryTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o.max_bytes = l.RecordBytes();
  EXPECT_TRUE(MemoryTier::Open(o).ok());
}

TEST(MemoryTierTest, OpenRefusesAnInvalidLayout) {
  BlockLayout l = Layout();
  l.block_bytes += 64;
  MemoryTierOptions o;
  o.layout = l;
  o.max_bytes = int64_t{1} << 20;
  EXPECT_EQ(MemoryTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o.layout = Layout();
  o.layout.layers.clear();
  EXPECT_EQ(MemoryTier::Open(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(MemoryTierTest, ConcurrentPutsAndGetsStayConsistent) {
  const BlockLayout l = Layout();
  auto t = Open(16 * l.RecordBytes());
  ASSERT_TRUE(t);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      std::vector<uint8_t> out(l.block_bytes);
      for (uint64_t i = 0; i < 200; ++i) {
        const Block b = MakeBlock(l, (i % 40) + 1);
        if (w % 2 == 0) {
          Put(*t, b);
        } else {
          auto r = t->Get(b.hash, out.data());
          if (r.ok() && (out != b.payload || r->hash != b.hash)) ++bad;
          if (!r.ok() && r.status().code() != StatusCode::kNotFound) ++bad;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  const KvTierStats s = t->stats();
  EXPECT_LE(s.blocks, 16);
  EXPECT_EQ(s.bytes, s.blocks * l.RecordBytes());
  EXPECT_EQ(s.corrupt, 0);
}

}  // namespace
}  // namespace pagoda::kv
