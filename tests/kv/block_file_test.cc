#include "kv/block_file.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xxhash.h>

namespace pagoda::kv {
namespace {

using kernels::KvType;

BlockLayout MakeLayout(KvType type, std::vector<KvLayerWidths> layers, int32_t block_size,
                       uint64_t fingerprint = 0x1234abcd5678ef01ULL) {
  BlockLayout l;
  l.model_fingerprint = fingerprint;
  l.layers = std::move(layers);
  l.type = type;
  l.block_size = block_size;
  BlockPoolOptions po;
  po.layers = l.layers;
  po.type = type;
  po.block_size = block_size;
  l.block_bytes = BlockPool::BlockBytes(po);
  return l;
}

BlockLayout SmallF16() { return MakeLayout(KvType::kF16, {{8, 8, 2}, {8, 8, 2}}, 4); }

std::vector<int32_t> Tokens(int32_t n, int32_t first = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<uint8_t> Payload(const BlockLayout& l, uint8_t seed = 7) {
  std::vector<uint8_t> p(l.block_bytes);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(seed + i * 31);
  return p;
}

std::vector<uint8_t> Encode(const BlockLayout& l, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out;
  EncodeBlock(l, BlockHash{0x1111, 0x2222}, BlockHash{0x3333, 0x4444}, Tokens(l.block_size), payload.data(),
              &out);
  return out;
}

template <class T>
T At(const std::vector<uint8_t>& b, size_t off) {
  // Little-endian by hand, independent of the encoder's memcpy.
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t{b[off + i]} << (8 * i);
  return static_cast<T>(v);
}

struct LayoutCase {
  const char* name;
  BlockLayout layout;
};

class BlockFileRoundTripTest : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(BlockFileRoundTripTest, DecodeReturnsWhatWasEncoded) {
  const BlockLayout& l = GetParam().layout;
  ASSERT_GT(l.block_bytes, 0);
  const std::vector<uint8_t> payload = Payload(l);
  const std::vector<uint8_t> rec = Encode(l, payload);
  ASSERT_EQ(static_cast<int64_t>(rec.size()), l.RecordBytes());
  std::vector<uint8_t> back(l.block_bytes, 0);
  auto r = DecodeBlock(l, rec, back.data());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(back, payload);
  EXPECT_EQ(r->hash, (BlockHash{0x1111, 0x2222}));
  EXPECT_EQ(r->parent, (BlockHash{0x3333, 0x4444}));
  EXPECT_EQ(r->tokens, Tokens(l.block_size));
  auto h = DecodeBlockHeader(l, std::span(rec).first(kBlockFileFixedHeader + 4 * l.block_size));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->hash, r->hash);
  EXPECT_EQ(h->tokens, r->tokens);
}

INSTANTIATE_TEST_SUITE_P(
    BlockFileLayouts, BlockFileRoundTripTest,
    ::testing::Values(LayoutCase{"f16", SmallF16()},
                      LayoutCase{"bf16_16", MakeLayout(KvType::kBf16, {{64, 64, 4}, {32, 32, 2}}, 16)},
                      LayoutCase{"fp8", MakeLayout(KvType::kFp8E4M3, {{16, 16, 2}, {16, 16, 2}}, 8)},
                      LayoutCase{"int8", MakeLayout(KvType::kInt8, {{24, 12, 3}}, 5)},
                      LayoutCase{"mla_f16", MakeLayout(KvType::kF16, {{576, 0, 1}, {576, 0, 1}}, 4)},
                      LayoutCase{"mla_int8", MakeLayout(KvType::kInt8, {{576, 0, 1}}, 3)}),
    [](const ::testing::TestParamInfo<LayoutCase>& i) { return std::string(i.param.name); });

TEST(BlockFileTest, HeaderFieldsLieAtTheDocumentedOffsets) {
  const BlockLayout l = MakeLayout(KvType::kInt8, {{8, 8, 2}, {8, 0, 1}, {4, 4, 1}}, 6);
  const std::vector<uint8_t> payload = Payload(l);
  const std::vector<uint8_t> b = Encode(l, payload);
  const size_t h = 96 + 4 * 6;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 8), std::string("PGKVBLK\0", 8));
  EXPECT_EQ(At<uint32_t>(b, 8), 1u);
  EXPECT_EQ(At<uint32_t>(b, 12), h);
  EXPECT_EQ(At<uint64_t>(b, 16), 0x1234abcd5678ef01ULL);
  EXPECT_EQ(At<uint64_t>(b, 24), l.LayoutHash());
  EXPECT_EQ(At<uint32_t>(b, 32), static_cast<uint32_t>(KvType::kInt8));
  EXPECT_EQ(At<uint32_t>(b, 36), 6u);
  EXPECT_EQ(At<uint32_t>(b, 40), 3u);
  EXPECT_EQ(At<uint32_t>(b, 44), 0u);
  EXPECT_EQ(At<uint64_t>(b, 48), 0x1111u);
  EXPECT_EQ(At<uint64_t>(b, 56), 0x2222u);
  EXPECT_EQ(At<uint64_t>(b, 64), 0x3333u);
  EXPECT_EQ(At<uint64_t>(b, 72), 0x4444u);
  EXPECT_EQ(At<uint64_t>(b, 80), static_cast<uint64_t>(l.block_bytes));
  EXPECT_EQ(At<uint64_t>(b, 88), 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(At<int32_t>(b, 96 + 4 * i), 100 + i);
  EXPECT_EQ(std::memcmp(b.data() + h, payload.data(), payload.size()), 0);
  const size_t end = h + payload.size();
  ASSERT_EQ(b.size(), end + 8);
  EXPECT_EQ(At<uint64_t>(b, end), XXH3_64bits(b.data(), end));
}

TEST(BlockFileTest, EncodeAppendsToWhatIsThere) {
  const BlockLayout l = SmallF16();
  const std::vector<uint8_t> payload = Payload(l);
  std::vector<uint8_t> two = Encode(l, payload);
  EncodeBlock(l, BlockHash{5, 6}, BlockHash{0x1111, 0x2222}, Tokens(4, 7), payload.data(), &two);
  ASSERT_EQ(static_cast<int64_t>(two.size()), 2 * l.RecordBytes());
  std::vector<uint8_t> back(l.block_bytes);
  auto r = DecodeBlock(l, std::span(two).subspan(l.RecordBytes()), back.data());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->hash, (BlockHash{5, 6}));
  EXPECT_EQ(r->tokens, Tokens(4, 7));
}

TEST(BlockFileTest, LayoutHashCoversEveryLayoutField) {
  const BlockLayout base = SmallF16();
  std::vector<BlockLayout> changed(7, base);
  changed[0].layers[1].k = 16;
  changed[1].layers[0].v = 0;
  changed[2].layers[0].n_head_kv = 4;
  changed[3].type = KvType::kBf16;
  changed[4].block_size = 8;
  changed[5].block_bytes += 64;
  changed[6].layers.pop_back();
  for (const BlockLayout& c : changed) EXPECT_NE(c.LayoutHash(), base.LayoutHash());
  BlockLayout other_model = base;
  other_model.model_fingerprint ^= 1;  // the fingerprint has its own field
  EXPECT_EQ(other_model.LayoutHash(), base.LayoutHash());
}

bool Refused(StatusCode c) {
  return c == StatusCode::kDataLoss || c == StatusCode::kInvalidArgument || c == StatusCode::kFailedPrecondition;
}

TEST(BlockFileTest, EverySingleByteFlipIsRefusedAndLeavesPayloadAlone) {
  for (const BlockLayout& l : {SmallF16(), MakeLayout(KvType::kInt8, {{8, 8, 2}, {8, 0, 1}}, 3)}) {
    const std::vector<uint8_t> rec = Encode(l, Payload(l));
    const std::vector<uint8_t> sentinel(l.block_bytes, 0xEE);
    std::vector<uint8_t> out = sentinel;
    for (size_t i = 0; i < rec.size(); ++i) {
      for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
        std::vector<uint8_t> bad = rec;
        bad[i] ^= mask;
        auto r = DecodeBlock(l, bad, out.data());
        ASSERT_FALSE(r.ok()) << "byte " << i << " ^ " << int{mask};
        EXPECT_TRUE(Refused(r.status().code())) << r.status().ToString();
        ASSERT_EQ(out, sentinel) << "byte " << i;
      }
    }
  }
}

TEST(BlockFileTest, PayloadFlipIsDataLoss) {
  const BlockLayout l = SmallF16();
  std::vector<uint8_t> rec = Encode(l, Payload(l));
  rec[96 + 4 * 4 + 10] ^= 4;
  std::vector<uint8_t> out(l.block_bytes);
  EXPECT_EQ(DecodeBlock(l, rec, out.data()).status().code(), StatusCode::kDataLoss);
  // The header alone does not look at the payload.
  EXPECT_TRUE(DecodeBlockHeader(l, rec).ok());
}

TEST(BlockFileTest, EveryTruncationIsRefused) {
  const BlockLayout l = SmallF16();
  const std::vector<uint8_t> rec = Encode(l, Payload(l));
  const std::vector<uint8_t> sentinel(l.block_bytes, 0xEE);
  std::vector<uint8_t> out = sentinel;
  const size_t header = 96 + 4 * 4;
  for (size_t n = 0; n < rec.size(); ++n) {
    auto r = DecodeBlock(l, std::span(rec).first(n), out.data());
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << n;
    ASSERT_EQ(out, sentinel);
    EXPECT_EQ(DecodeBlockHeader(l, std::span(rec).first(n)).ok(), n >= header) << n;
  }
}

TEST(BlockFileTest, AnotherModelOrLayoutIsFailedPrecondition) {
  const BlockLayout l = SmallF16();
  const std::vector<uint8_t> rec = Encode(l, Payload(l));
  std::vector<uint8_t> out(l.block_bytes, 0xEE);
  BlockLayout other_model = l;
  other_model.model_fingerprint = 99;
  EXPECT_EQ(DecodeBlock(other_model, rec, out.data()).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(DecodeBlockHeader(other_model, rec).status().code(), StatusCode::kFailedPrecondition);
  for (const BlockLayout& other : {MakeLayout(KvType::kBf16, {{8, 8, 2}, {8, 8, 2}}, 4),
                                   MakeLayout(KvType::kF16, {{8, 8, 1}, {8, 8, 1}}, 4),
                                   MakeLayout(KvType::kF16, {{8, 8, 2}, {8, 8, 2}}, 8),
                                   MakeLayout(KvType::kF16, {{8, 8, 2}}, 4)}) {
    std::vector<uint8_t> big(other.block_bytes + 4096, 0xEE);
    EXPECT_EQ(DecodeBlock(other, rec, big.data()).status().code(), StatusCode::kFailedPrecondition);
    EXPECT_TRUE(std::all_of(big.begin(), big.end(), [](uint8_t b) { return b == 0xEE; }));
  }
}

// A header forged with a valid checksum: only the field checks can refuse it.
std::vector<uint8_t> Forge(std::vector<uint8_t> rec, size_t off, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) rec[off + i] = static_cast<uint8_t>(value >> (8 * i));
  const size_t end = rec.size() - 8;
  const uint64_t sum = XXH3_64bits(rec.data(), end);
  for (size_t i = 0; i < 8; ++i) rec[end + i] = static_cast<uint8_t>(sum >> (8 * i));
  return rec;
}

TEST(BlockFileTest, HugeCountsAreRefusedWithoutAllocating) {
  const BlockLayout l = SmallF16();
  const std::vector<uint8_t> rec = Encode(l, Payload(l));
  std::vector<uint8_t> out(l.block_bytes, 0xEE);
  const struct {
    size_t off, width;
    uint64_t value;
  } forged[] = {
      {36, 4, 0xFFFFFFFFu},                  // block_size
      {12, 4, 0xFFFFFFF0u},                  // header bytes
      {40, 4, 0xFFFFFFFFu},                  // n_layers
      {80, 8, ~uint64_t{0}},                 // payload bytes
      {80, 8, uint64_t{1} << 40},
      {8, 4, 2},                             // version
      {44, 4, 1},                            // reserved
      {32, 4, 200},                          // KV type
  };
  for (const auto& f : forged) {
    const std::vector<uint8_t> bad = Forge(rec, f.off, f.value, f.width);
    auto r = DecodeBlock(l, bad, out.data());
    ASSERT_FALSE(r.ok()) << "field at " << f.off;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << "field at " << f.off << ": "
                                                               << r.status().ToString();
    EXPECT_EQ(DecodeBlockHeader(l, bad).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](uint8_t b) { return b == 0xEE; }));
}

TEST(BlockFileTest, InvalidReaderLayoutIsRefused) {
  const BlockLayout l = SmallF16();
  const std::vector<uint8_t> rec = Encode(l, Payload(l));
  BlockLayout empty = l;
  empty.layers.clear();
  EXPECT_EQ(DecodeBlockHeader(empty, rec).status().code(), StatusCode::kInvalidArgument);
  BlockLayout no_bytes = l;
  no_bytes.block_bytes = 0;
  EXPECT_EQ(DecodeBlockHeader(no_bytes, rec).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pagoda::kv
