#include "kv/block_table.h"

#include <gtest/gtest.h>

namespace pagoda::kv {
namespace {

TEST(BlockTableTest, VerifyNoticesARecycledBlock) {
  BlockPoolOptions o;
  o.layers = {KvLayerWidths{4, 4}};
  o.block_size = 4;
  o.memory_bytes = 2 * BlockPool::BlockBytes(o);
  auto pool = BlockPool::Create(o);
  ASSERT_TRUE(pool.ok());
  BlockPool& p = **pool;
  BlockTable t;
  const BlockId a = p.Allocate(), b = p.Allocate();
  t.Append(a, p.integrity_tag(a));
  t.Append(b, p.integrity_tag(b));
  EXPECT_EQ(t.size(), 2);
  EXPECT_EQ(t[1], b);
  EXPECT_TRUE(t.Verify(p));
  // A bug elsewhere frees b and hands it to someone else while t still lists it.
  p.Release(b);
  EXPECT_FALSE(t.Verify(p));
  ASSERT_EQ(p.Allocate(), b);
  EXPECT_FALSE(t.Verify(p));
  t.Resize(1);
  EXPECT_TRUE(t.Verify(p));
  t.Replace(0, b, p.integrity_tag(b));
  EXPECT_TRUE(t.Verify(p));
}

}  // namespace
}  // namespace pagoda::kv
