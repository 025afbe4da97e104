#include "kvevents/kv_event_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kvevents/golden_batches.h"

namespace pagoda::kvevents {
namespace {

using testing::Bytes;
using testing::GoldenArrayBatch;
using testing::GoldenMapBatch;
using testing::Str;
const std::string kTs = testing::GoldenTs();

const BlockStored& StoredAt(const EventBatch& b, size_t i) { return std::get<BlockStored>(b.events.at(i)); }

// ---- golden batches: tests/kvevents/golden_batches.h ------------------------

TEST(KvEventCodecTest, DecodesGoldenMapLayout) {
  auto b = DecodeBatch(GoldenMapBatch());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_DOUBLE_EQ(b->ts, 1700000000.5);
  ASSERT_EQ(b->events.size(), 3u);
  const BlockStored& st = StoredAt(*b, 0);
  ASSERT_EQ(st.block_hashes.size(), 2u);
  EXPECT_EQ(st.block_hashes[0], ExternalBlockHash::FromInt(12345));
  EXPECT_EQ(st.block_hashes[1], ExternalBlockHash::FromInt(static_cast<uint64_t>(int64_t{-7})));
  EXPECT_FALSE(st.parent_block_hash.has_value());
  EXPECT_EQ(st.token_ids, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(st.block_size, 4);
  EXPECT_FALSE(st.lora_id.has_value());
  EXPECT_EQ(st.medium, "GPU");
  EXPECT_FALSE(st.lora_name.has_value());
  const auto& rm = std::get<BlockRemoved>(b->events[1]);
  ASSERT_EQ(rm.block_hashes.size(), 1u);
  EXPECT_TRUE(rm.block_hashes[0].is_bytes());
  EXPECT_EQ(rm.block_hashes[0].bytes(), Bytes({0xde, 0xad, 0xbe, 0xef}));
  EXPECT_EQ(rm.medium, "GPU");
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(b->events[2]));
  EXPECT_EQ(b->data_parallel_rank, 0);
}

TEST(KvEventCodecTest, DecodesGoldenArrayLikeLayout) {
  auto b = DecodeBatch(GoldenArrayBatch());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_DOUBLE_EQ(b->ts, 1700000000.5);
  ASSERT_EQ(b->events.size(), 2u);
  const BlockStored& st = StoredAt(*b, 0);
  EXPECT_EQ(st.block_hashes, std::vector<ExternalBlockHash>{ExternalBlockHash::FromInt(0xfedcba9876543210ULL)});
  ASSERT_TRUE(st.parent_block_hash.has_value());
  EXPECT_EQ(*st.parent_block_hash, ExternalBlockHash::FromInt(static_cast<uint64_t>(-int64_t{0x123456789})));
  EXPECT_EQ(st.token_ids, (std::vector<int32_t>{100, 200, 300, 40000}));
  EXPECT_EQ(st.block_size, 4);
  EXPECT_EQ(st.medium, "GPU");
  const auto& rm = std::get<BlockRemoved>(b->events[1]);
  EXPECT_EQ(rm.block_hashes, st.block_hashes);
  EXPECT_FALSE(rm.medium.has_value());
  EXPECT_EQ(b->data_parallel_rank, 1);
}

TEST(KvEventCodecTest, DecodesArrayBatchOfMapEvents) {
  // A batch array_like while its events are maps (seen in vLLM forks).
  const std::string s = Bytes({0x92}) + kTs + Bytes({0x91, 0x81}) + Str("type") + Str("AllBlocksCleared");
  auto b = DecodeBatch(s);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(b->events[0]));
  EXPECT_FALSE(b->data_parallel_rank.has_value());
}

TEST(KvEventCodecTest, SkipsUnknownEventTypes) {
  const std::string s = Bytes({0x82}) + Str("ts") + Bytes({0x05}) + Str("events") + Bytes({0x92, 0x81}) +
                        Str("type") + Str("BlockMoved") + Bytes({0x91}) + Str("AllBlocksCleared");
  auto b = DecodeBatch(s);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_DOUBLE_EQ(b->ts, 5.0);
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(b->events[0]));
}

EventBatch SampleBatch() {
  EventBatch b;
  b.ts = 1234.25;
  BlockStored st;
  st.block_hashes = {ExternalBlockHash::FromInt(~uint64_t{0}), ExternalBlockHash::FromInt(7)};
  st.parent_block_hash = ExternalBlockHash::FromInt(0x8000000000000000ULL);
  for (int i = 0; i < 6; ++i) st.token_ids.push_back(i * 70000);
  st.block_size = 3;
  st.medium = kMediumCpu;
  b.events.push_back(st);
  BlockStored st2 = st;
  st2.parent_block_hash.reset();
  st2.block_hashes = {ExternalBlockHash::FromBytes(std::string(32, '\x01')), ExternalBlockHash::FromInt(0)};
  st2.lora_id = -3;
  st2.lora_name = "adapter";
  st2.extra_keys = std::vector<BlockExtraKeys>{
      std::nullopt, std::vector<ExtraKey>{ExtraKey::Int(SaltDigest("tenant-a")), ExtraKey::Int(~uint64_t{0} - 1),
                                          ExtraKey::Str("mm-0"), ExtraKey::Bytes(std::string(3, '\0'))}};
  b.events.push_back(st2);
  b.events.push_back(BlockRemoved{{ExternalBlockHash::FromInt(7)}, kMediumCpu});
  b.events.push_back(AllBlocksCleared{});
  return b;
}

TEST(KvEventCodecTest, RoundTripsEveryField) {
  const EventBatch b = SampleBatch();
  auto d = DecodeBatch(EncodeBatch(b));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, b);
  EventBatch with_rank = b;
  with_rank.data_parallel_rank = 3;
  auto d2 = DecodeBatch(EncodeBatch(with_rank));
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(*d2, with_rank);
}

TEST(KvEventCodecTest, EncodesVllmMapLayout) {
  // The golden map batch minus what Pagoda does not send (group_idx), with a
  // CPU medium: the bytes must be vLLM's, key for key.
  EventBatch b;
  b.ts = 1700000000.5;
  BlockStored st;
  st.block_hashes = {ExternalBlockHash::FromInt(12345)};
  st.token_ids = {1, 2, 3, 4};
  st.block_size = 4;
  st.medium = "GPU";
  b.events.push_back(st);
  std::string want = Bytes({0x82}) + Str("ts") + kTs + Str("events") + Bytes({0x91, 0x88}) + Str("type") +
                     Str("BlockStored") + Str("block_hashes") + Bytes({0x91, 0xcd, 0x30, 0x39}) +
                     Str("parent_block_hash") + Bytes({0xc0}) + Str("token_ids") + Bytes({0x94, 1, 2, 3, 4}) +
                     Str("block_size") + Bytes({0x04}) + Str("lora_id") + Bytes({0xc0}) + Str("medium") + Str("GPU") +
                     Str("lora_name") + Bytes({0xc0});
  EXPECT_EQ(EncodeBatch(b), want);
}

TEST(KvEventCodecTest, EncodesExtraKeysAfterLoraName) {
  // vLLM: extra_keys: list[tuple[Any, ...] | None] | None = None, declared
  // after lora_name; omitted while None (omit_defaults), else one entry per block.
  EventBatch b;
  b.ts = 1700000000.5;
  BlockStored st;
  st.block_hashes = {ExternalBlockHash::FromInt(1), ExternalBlockHash::FromInt(2)};
  st.token_ids = {1, 2};
  st.block_size = 1;
  st.medium = "CPU";
  st.extra_keys = std::vector<BlockExtraKeys>{std::vector<ExtraKey>{ExtraKey::Int(0x0102030405060708ULL)},
                                              std::nullopt};
  b.events.push_back(st);
  std::string want = Bytes({0x82}) + Str("ts") + kTs + Str("events") + Bytes({0x91, 0x89}) + Str("type") +
                     Str("BlockStored") + Str("block_hashes") + Bytes({0x92, 0x01, 0x02}) + Str("parent_block_hash") +
                     Bytes({0xc0}) + Str("token_ids") + Bytes({0x92, 1, 2}) + Str("block_size") + Bytes({0x01}) +
                     Str("lora_id") + Bytes({0xc0}) + Str("medium") + Str("CPU") + Str("lora_name") + Bytes({0xc0}) +
                     Str("extra_keys") + Bytes({0x92, 0x91, 0xcf, 1, 2, 3, 4, 5, 6, 7, 8, 0xc0});
  EXPECT_EQ(EncodeBatch(b), want);
  auto d = DecodeBatch(want);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, b);
}

TEST(KvEventCodecTest, DecodesVllmExtraKeysInBothLayouts) {
  // Map layout as a newer vLLM sends it: the raw cache_salt string on the
  // first block, an (identifier, offset)-like nested tuple and a float
  // (skipped), nil on the second; then group_idx (skipped).
  std::string ev = Bytes({0x8a}) + Str("type") + Str("BlockStored");
  ev += Str("block_hashes") + Bytes({0x92, 0x05, 0x06}) + Str("parent_block_hash") + Bytes({0xc0});
  ev += Str("token_ids") + Bytes({0x92, 7, 8}) + Str("block_size") + Bytes({0x01}) + Str("lora_id") + Bytes({0xc0});
  ev += Str("medium") + Str("GPU") + Str("lora_name") + Bytes({0xc0});
  ev += Str("extra_keys") + Bytes({0x92, 0x94}) + Str("salt-1") + Bytes({0x92, 0x01, 0x02, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}) +
        Bytes({0xff}) + Bytes({0xc0});
  ev += Str("group_idx") + Bytes({0x00});
  auto b = DecodeBatch(testing::MapBatch({ev}));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const BlockStored& st = StoredAt(*b, 0);
  ASSERT_TRUE(st.extra_keys.has_value());
  ASSERT_EQ(st.extra_keys->size(), 2u);
  ASSERT_TRUE((*st.extra_keys)[0].has_value());
  EXPECT_EQ(*(*st.extra_keys)[0],
            (std::vector<ExtraKey>{ExtraKey::Str("salt-1"), ExtraKey::Int(static_cast<uint64_t>(int64_t{-1}))}));
  EXPECT_FALSE((*st.extra_keys)[1].has_value());
  // array_like: the ninth element.
  const std::string arr = Bytes({0x92}) + kTs + Bytes({0x91, 0x99}) + Str("BlockStored") + Bytes({0x91, 0x05, 0xc0}) +
                          Bytes({0x91, 0x07, 0x01, 0xc0}) + Str("GPU") + Bytes({0xc0}) + Bytes({0x91, 0x91, 0x2a});
  auto a = DecodeBatch(arr);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(StoredAt(*a, 0).extra_keys.has_value());
  EXPECT_EQ(*StoredAt(*a, 0).extra_keys, (std::vector<BlockExtraKeys>{std::vector<ExtraKey>{ExtraKey::Int(42)}}));
  // The golden batches (no extra_keys) still decode without them.
  auto g = DecodeBatch(GoldenMapBatch());
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(StoredAt(*g, 0).extra_keys.has_value());
}

TEST(KvEventCodecTest, RejectsExtraKeysThatAreNotOnePerBlock) {
  auto with = [](const std::string& extra) {
    return Bytes({0x92}) + kTs + Bytes({0x91, 0x99}) + Str("BlockStored") + Bytes({0x91, 0x05, 0xc0}) +
           Bytes({0x91, 0x07, 0x01, 0xc0}) + Str("GPU") + Bytes({0xc0}) + extra;
  };
  EXPECT_FALSE(DecodeBatch(with(Bytes({0x92, 0xc0, 0xc0}))).ok());  // 2 entries, 1 block
  EXPECT_FALSE(DecodeBatch(with(Bytes({0x90}))).ok());              // none
  EXPECT_FALSE(DecodeBatch(with(Bytes({0x2a}))).ok());              // not an array
  EXPECT_FALSE(DecodeBatch(with(Bytes({0x91, 0x2a}))).ok());        // an entry neither nil nor a tuple
  EXPECT_TRUE(DecodeBatch(with(Bytes({0xc0}))).ok());               // None
}

TEST(KvEventCodecTest, SaltDigestIsXxh3Of64Bits) {
  // XXH3_64bits("") and of "tenant-a", as the xxhsum CLI (-H3) prints them.
  EXPECT_EQ(SaltDigest(""), 0x2d06800538d394c2ULL);
  EXPECT_NE(SaltDigest("tenant-a"), SaltDigest("tenant-b"));
}

TEST(KvEventCodecTest, RejectsEveryTruncation) {
  for (const std::string& full : {EncodeBatch(SampleBatch()), GoldenMapBatch(), GoldenArrayBatch()}) {
    for (size_t n = 0; n < full.size(); ++n) {
      EXPECT_FALSE(DecodeBatch(std::string_view(full).substr(0, n)).ok()) << "prefix of " << n << " bytes";
    }
  }
}

TEST(KvEventCodecTest, RejectsTrailingBytes) {
  EXPECT_FALSE(DecodeBatch(EncodeBatch(SampleBatch()) + Bytes({0xc0})).ok());
}

TEST(KvEventCodecTest, RejectsHugeDeclaredLengths) {
  const std::vector<std::string> cases = {
      Bytes({0xdd, 0xff, 0xff, 0xff, 0xff}),        // array32 of 4G elements, no content
      Bytes({0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0}),  // map32 of 4G pairs
      Bytes({0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}),   // str32 of 4 GiB
      Bytes({0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00}),  // bin32 of 2 GiB
      // A batch whose token_ids declare 16M entries and hold one.
      Bytes({0x92, 0x00, 0x91, 0x95}) + Str("BlockStored") + Bytes({0x90, 0xc0, 0xdd, 0x01, 0x00, 0x00, 0x00, 0x01}),
  };
  for (const std::string& c : cases) EXPECT_FALSE(DecodeBatch(c).ok());
}

TEST(KvEventCodecTest, RejectsNestingBombs) {
  EXPECT_FALSE(DecodeBatch(std::string(100000, '\x91') + Bytes({0xc0})).ok());
  // Within the depth limit but not a batch either.
  EXPECT_FALSE(DecodeBatch(std::string(10, '\x91') + Bytes({0xc0})).ok());
}

TEST(KvEventCodecTest, RejectsWrongTypes) {
  auto batch = [](const std::string& event) {
    return Bytes({0x92}) + Bytes({0x00}) + Bytes({0x91}) + event;
  };
  const std::string stored = Bytes({0x95}) + Str("BlockStored");
  const std::vector<std::string> cases = {
      Bytes({0x2a}),                                                // an int, not a batch
      Bytes({0x92}) + Str("x") + Bytes({0x90}),                     // ts a string
      Bytes({0x92, 0x00, 0x80}),                                    // events a map
      Bytes({0x93, 0x00, 0x90}) + Str("r"),                         // data_parallel_rank a string
      Bytes({0x93, 0x00, 0x90, 0xff}),                              // data_parallel_rank negative
      Bytes({0x92, 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0, 0x90}),      // ts NaN
      batch(Bytes({0x2a})),                                         // an event that is an int
      batch(Bytes({0x91, 0x2a})),                                   // a tag that is an int
      batch(Bytes({0x80})),                                         // a map event without "type"
      batch(stored + Bytes({0x91}) + Str("h") + Bytes({0xc0, 0x91, 0x01, 0x01})),     // hash a string
      batch(stored + Bytes({0x91, 0x01, 0xc0, 0x91, 0xff, 0x01})),                    // negative token
      batch(stored + Bytes({0x91, 0x01, 0xc0, 0x91, 0xce, 0x80, 0, 0, 0, 0x01})),     // token > int32
      batch(stored + Bytes({0x91, 0x01, 0xc0, 0x92, 0x01, 0x02, 0x01})),              // 2 tokens, 1 block of 1
      batch(stored + Bytes({0x91, 0x01, 0xc0, 0x90, 0x00})),                          // block_size 0
      batch(Bytes({0x94}) + Str("BlockStored") + Bytes({0x91, 0x01, 0xc0, 0x91, 0x01})),  // block_size missing
      batch(Bytes({0x93}) + Str("BlockStored") + Bytes({0x91, 0x01, 0xc0})),         // token_ids missing
      batch(Bytes({0x93}) + Str("BlockRemoved") + Bytes({0x91, 0x01, 0x05})),        // medium an int
      batch(Bytes({0x92}) + Str("BlockRemoved") + Bytes({0x01})),                    // hashes an int
  };
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_FALSE(DecodeBatch(cases[i]).ok()) << "case " << i;
}

TEST(KvEventCodecTest, ErrorsNameTheProblem) {
  auto b = DecodeBatch(Bytes({0x92, 0x00, 0x80}));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("events"), std::string::npos) << b.status().ToString();
}

}  // namespace
}  // namespace pagoda::kvevents
