#include "kvtransfer/transfer_protocol.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kvtransfer/transfer_test_streams.h"

namespace pagoda::kvtransfer {
namespace {

using testing::MemoryReader;

TEST(TransferProtocolTest, FramesAreLittleEndianAsDocumented) {
  std::vector<uint8_t> s;
  AppendStreamHeader("ab", &s);
  AppendBlockFrameHeader(0x01020304u, &s);
  AppendEndFrame(7, &s);
  const std::vector<uint8_t> want = {'P', 'G', 'K', 'V', 'X', 'F', '1', 0,  // magic
                                     2,   0,   0,   0,   'a', 'b',           // id
                                     1,   4,   3,   2,   1,                  // block frame
                                     2,   7,   0,   0,   0};                 // end frame
  EXPECT_EQ(s, want);
}

TEST(TransferProtocolTest, AckRoundTrips) {
  for (const TransferAck& a : {TransferAck{true, 12, 0, ""}, TransferAck{false, 3, 1, "checksum mismatch"}}) {
    std::vector<uint8_t> bytes;
    AppendAck(a, &bytes);
    EXPECT_EQ(bytes.size(), 8u + 1 + 4 + 4 + 2 + a.message.size());
    MemoryReader r(bytes);
    auto b = ReadAck(r);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b->ok, a.ok);
    EXPECT_EQ(b->kept, a.kept);
    EXPECT_EQ(b->refused, a.refused);
    EXPECT_EQ(b->message, a.message);
    EXPECT_EQ(r.consumed(), bytes.size());
  }
}

TEST(TransferProtocolTest, AckMessageIsCutAtTheLimit) {
  TransferAck a;
  a.message = std::string(5000, 'x');
  std::vector<uint8_t> bytes;
  AppendAck(a, &bytes);
  MemoryReader r(bytes);
  auto b = ReadAck(r);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->message.size(), kMaxAckMessage);
}

TEST(TransferProtocolTest, MalformedAcksAreErrors) {
  std::vector<uint8_t> good;
  AppendAck(TransferAck{false, 1, 2, "why"}, &good);
  for (size_t n = 0; n < good.size(); ++n) {
    MemoryReader r(std::span<const uint8_t>(good).first(n));
    EXPECT_FALSE(ReadAck(r).ok()) << n;
  }
  std::vector<uint8_t> bad = good;
  bad[0] ^= 1;
  MemoryReader r1(bad);
  EXPECT_FALSE(ReadAck(r1).ok());
  bad = good;
  bad[8] = 2;  // status other than 0 / 1
  MemoryReader r2(bad);
  EXPECT_FALSE(ReadAck(r2).ok());
  bad = good;
  bad[17] = 0xff;  // message length 0xff01 > 1024
  bad[18] = 0xff;
  bad.resize(70000, 'x');
  MemoryReader r3(bad);
  EXPECT_FALSE(ReadAck(r3).ok());
  EXPECT_LE(r3.largest_read(), 8u);
}

TEST(TransferProtocolTest, TransferIdsAreShortAndPlain) {
  EXPECT_TRUE(ValidTransferId("a"));
  EXPECT_TRUE(ValidTransferId("chatcmpl-9f8e.7_A"));
  EXPECT_TRUE(ValidTransferId(std::string(128, 'z')));
  EXPECT_FALSE(ValidTransferId(""));
  EXPECT_FALSE(ValidTransferId(std::string(129, 'z')));
  for (const char* bad : {"a b", "a/b", "a:b", "a\nb", "\xc3\xa9", "a\"b"}) EXPECT_FALSE(ValidTransferId(bad)) << bad;
  EXPECT_FALSE(ValidTransferId(std::string("a\0b", 3)));
}

}  // namespace
}  // namespace pagoda::kvtransfer
