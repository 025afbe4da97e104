#include "kernels/cpu/kv_integrity.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagoda::kernels {
namespace {

// Two sequences over a pool of 4 blocks: s0 = [0, 1], s1 = [2].
struct Fixture {
  std::vector<int32_t> rec_off = {0, 2, 3}, rec_ids = {0, 1, 2}, live_off = {0, 2, 3}, live_ids = {0, 1, 2};
  std::vector<uint32_t> rec_tags = {10, 11, 12}, tags = {10, 11, 12, 13};
  std::vector<int32_t> refs = {1, 1, 2, 0};
  std::vector<int32_t> Check() {
    KvIntegrityBatch b{2, rec_off.data(), rec_ids.data(), rec_tags.data(), live_off.data(), live_ids.data(),
                       tags.data(), refs.data(), 4};
    std::vector<int32_t> out(2, 99);
    KvIntegrityCheck(b, out.data());
    return out;
  }
};

TEST(KvIntegrityCheckTest, IntactSequencesPass) {
  Fixture f;
  EXPECT_EQ(f.Check(), (std::vector<int32_t>{kKvIntact, kKvIntact}));
}

TEST(KvIntegrityCheckTest, NamesTheFirstBadEntry) {
  Fixture f;
  f.tags[1] = 99;  // block 1 retagged
  EXPECT_EQ(f.Check(), (std::vector<int32_t>{1, kKvIntact}));
  f = Fixture();
  f.refs[0] = 0;  // block 0 freed
  EXPECT_EQ(f.Check(), (std::vector<int32_t>{0, kKvIntact}));
  f = Fixture();
  f.live_ids[2] = 3;  // another block in s1's table
  EXPECT_EQ(f.Check(), (std::vector<int32_t>{kKvIntact, 0}));
  f = Fixture();
  f.live_ids[0] = -5;  // out of range
  EXPECT_EQ(f.Check(), (std::vector<int32_t>{0, kKvIntact}));
}

TEST(KvIntegrityCheckTest, LengthChangeIsItsOwnResult) {
  Fixture f;
  f.live_off = {0, 1, 2};
  f.live_ids = {0, 2};
  EXPECT_EQ(f.Check(), (std::vector<int32_t>{kKvLengthChanged, kKvIntact}));
}

}  // namespace
}  // namespace pagoda::kernels
