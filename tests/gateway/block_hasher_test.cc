#include "gateway/block_hasher.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include <xxhash.h>

namespace pagoda::gateway {
namespace {

std::vector<int32_t> Iota(int n, int32_t start = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(BlockHasherTest, OneHashPerFullBlockChainedOnThePrevious) {
  const std::vector<int32_t> t = Iota(40, 100);
  const auto h = ChainedBlockHashes(t, 16, 7);
  ASSERT_EQ(h.size(), 2u);  // 8 trailing tokens are not a block
  // The documented definition, computed with libxxhash directly.
  const uint64_t h0 = XXH3_64bits_withSeed(t.data(), 16 * sizeof(int32_t), 7);
  const uint64_t h1 = XXH3_64bits_withSeed(t.data() + 16, 16 * sizeof(int32_t), h0);
  EXPECT_EQ(h[0], h0);
  EXPECT_EQ(h[1], h1);
}

TEST(BlockHasherTest, ChangingATokenChangesItsBlockAndAllLaterOnes) {
  std::vector<int32_t> a = Iota(64);
  std::vector<int32_t> b = a;
  b[20] = 9999;  // block 1
  const auto ha = ChainedBlockHashes(a, 16);
  const auto hb = ChainedBlockHashes(b, 16);
  ASSERT_EQ(ha.size(), 4u);
  EXPECT_EQ(ha[0], hb[0]);
  for (size_t i = 1; i < 4; ++i) EXPECT_NE(ha[i], hb[i]) << i;
}

TEST(BlockHasherTest, SameBlockUnderAnotherPrefixHashesDifferently) {
  std::vector<int32_t> a = Iota(32);
  std::vector<int32_t> b = Iota(32);
  b[0] = 5000;  // only block 0 differs; block 1's tokens are identical
  EXPECT_NE(ChainedBlockHashes(a, 16)[1], ChainedBlockHashes(b, 16)[1]);
}

TEST(BlockHasherTest, SaltSeparatesChains) {
  const std::vector<int32_t> t = Iota(32);
  EXPECT_NE(ChainedBlockHashes(t, 16, 0)[0], ChainedBlockHashes(t, 16, 1)[0]);
  EXPECT_EQ(ChainedBlockHashes(t, 16, 3), ChainedBlockHashes(t, 16, 3));
}

TEST(BlockHasherTest, PrefixOfTokensGivesPrefixOfChain) {
  const std::vector<int32_t> t = Iota(100);
  const auto full = ChainedBlockHashes(t, 8);
  const auto part = ChainedBlockHashes(std::span<const int32_t>(t).first(37), 8);
  ASSERT_EQ(part.size(), 4u);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), full.begin()));
}

TEST(BlockHasherTest, DegenerateInputsGiveNoHashes) {
  const std::vector<int32_t> t = Iota(10);
  EXPECT_TRUE(ChainedBlockHashes(t, 0).empty());
  EXPECT_TRUE(ChainedBlockHashes(t, -4).empty());
  EXPECT_TRUE(ChainedBlockHashes({}, 16).empty());
  EXPECT_TRUE(ChainedBlockHashes(t, 16).empty());
}

TEST(BlockHasherTest, TextChainCoversFullByteBlocks) {
  const std::string s = "abcdefghijklmnopqrstuvwxyz";
  const auto h = ChainedTextHashes(s, 8);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0], XXH3_64bits_withSeed(s.data(), 8, 0));
  EXPECT_EQ(h[2], XXH3_64bits_withSeed(s.data() + 16, 8, h[1]));
  EXPECT_TRUE(ChainedTextHashes(s, 0).empty());
}

}  // namespace
}  // namespace pagoda::gateway
