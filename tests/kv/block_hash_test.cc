#include "kv/block_hash.h"

#include <vector>

#include <gtest/gtest.h>

namespace pagoda::kv {
namespace {

TEST(BlockHasherTest, SameTokensAndParentGiveTheSameHash) {
  BlockHasher a(4), b(4);
  const std::vector<int32_t> t = {1, 2, 3, 4};
  EXPECT_EQ(a.Next(a.Root(""), t), b.Next(b.Root(""), t));
}

TEST(BlockHasherTest, SaltChangesEveryBlockOfTheChain) {
  BlockHasher h(4);
  const std::vector<int32_t> t = {1, 2, 3, 4};
  const BlockHash plain = h.Next(h.Root(""), t);
  const BlockHash salted = h.Next(h.Root("tenant-a"), t);
  EXPECT_NE(plain, salted);
  EXPECT_NE(h.Next(plain, t), h.Next(salted, t));
  EXPECT_NE(h.Root("tenant-a"), h.Root("tenant-b"));
}

TEST(BlockHasherTest, HashDependsOnParentAndOrder) {
  BlockHasher h(2);
  const BlockHash root = h.Root("");
  const std::vector<int32_t> ab = {1, 2}, ba = {2, 1};
  EXPECT_NE(h.Next(root, ab), h.Next(root, ba));
  // Same block after different prefixes: different identities.
  EXPECT_NE(h.Next(h.Next(root, ab), ab), h.Next(h.Next(root, ba), ab));
}

TEST(BlockHasherTest, BlockSizeIsPartOfTheRoot) {
  BlockHasher h2(2), h4(4);
  EXPECT_NE(h2.Root(""), h4.Root(""));
}

TEST(BlockHasherTest, HashesArePinned) {
  // The byte-level definition (block_hash.h) is a contract with routers that
  // predict hits: a change here breaks them, so it must be deliberate.
  BlockHasher h(4);
  const BlockHash root = h.Root("");
  EXPECT_EQ(root.ToHex(), "b5dc853a345f7fc1e4c28e8eae8c6814");
  EXPECT_EQ(h.Next(root, std::vector<int32_t>{1, 2, 3, 4}).ToHex(), "81eee679ae930745fceb7b8df11bd8fb");
  EXPECT_EQ(h.Root("s").ToHex(), "e157f285222c278ac36683fc5a6a1c1d");
}

TEST(BlockHashTest, ToHexPrintsHighWordFirst) {
  EXPECT_EQ((BlockHash{0x1, 0xab}).ToHex(), "00000000000000ab0000000000000001");
}

}  // namespace
}  // namespace pagoda::kv
