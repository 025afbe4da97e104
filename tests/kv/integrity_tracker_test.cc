// IntegrityTracker against a hand-kept model of what each sequence was given:
// clean histories never fail (randomized, with sharing, copy-on-write and
// truncation), and each kind of planted corruption fails exactly the
// sequences it touches.
#include "kv/integrity_tracker.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace pagoda::kv {
namespace {

constexpr int kSeqs = 6;

std::unique_ptr<BlockPool> MakePool(int n_blocks) {
  BlockPoolOptions o;
  o.layers = {KvLayerWidths{4, 4}};
  o.type = kernels::KvType::kF32;
  o.block_size = 4;
  o.memory_bytes = BlockPool::BlockBytes(o) * n_blocks;
  auto p = BlockPool::Create(o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

// Tables plus a tracker kept in step the way the paged KV cache does it.
struct Fixture {
  explicit Fixture(IntegrityMode mode, int n_blocks = 64)
      : pool(MakePool(n_blocks)), tracker(MakeIntegrityTracker(mode, kSeqs)), tables(kSeqs) {
    for (const BlockTable& t : tables) table_ptrs.push_back(&t);
  }
  void Append(int seq, BlockId b) {
    tables[seq].Append(b, pool->integrity_tag(b));
    tracker->OnAppend(seq, b, pool->integrity_tag(b));
  }
  bool Grow(int seq) {
    const BlockId b = pool->Allocate();
    if (b == kNoBlock) return false;
    Append(seq, b);
    return true;
  }
  void Share(int seq, BlockId b) {  // prefix-cache adoption
    pool->Acquire(b);
    Append(seq, b);
  }
  void CopyOnWrite(int seq, int i) {
    const BlockId copy = pool->Allocate();
    ASSERT_NE(copy, kNoBlock);
    pool->Release(tables[seq][i]);
    tables[seq].Replace(i, copy, pool->integrity_tag(copy));
    tracker->OnReplace(seq, i, copy, pool->integrity_tag(copy));
  }
  void Truncate(int seq, int keep) {
    for (int i = tables[seq].size() - 1; i >= keep; --i) pool->Release(tables[seq][i]);
    tables[seq].Resize(keep);
    tracker->OnTruncate(seq, keep);
  }
  std::set<int32_t> Failing() {
    std::vector<int32_t> all;
    for (int s = 0; s < kSeqs; ++s) all.push_back(s);
    std::vector<IntegrityFailure> f;
    tracker->Check(all, table_ptrs, *pool, &f);
    std::set<int32_t> out;
    for (const auto& x : f) out.insert(x.seq);
    EXPECT_EQ(out.size(), f.size()) << "one failure per sequence";
    return out;
  }

  std::unique_ptr<BlockPool> pool;
  std::unique_ptr<IntegrityTracker> tracker;
  std::vector<BlockTable> tables;
  std::vector<const BlockTable*> table_ptrs;
};

TEST(IntegrityTrackerTest, ParsesModes) {
  EXPECT_EQ(ParseIntegrityMode("off"), IntegrityMode::kOff);
  EXPECT_EQ(ParseIntegrityMode("check"), IntegrityMode::kCheck);
  EXPECT_FALSE(ParseIntegrityMode("on").has_value());
  EXPECT_FALSE(ParseIntegrityMode("").has_value());
  EXPECT_STREQ(IntegrityModeName(IntegrityMode::kCheck), "check");
}

TEST(IntegrityTrackerTest, CleanSequencesPass) {
  Fixture f(IntegrityMode::kCheck);
  for (int s = 0; s < kSeqs; ++s) {
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.Grow(s));
  }
  f.Share(1, f.tables[0][0]);
  f.CopyOnWrite(1, 3);
  f.Truncate(2, 1);
  EXPECT_TRUE(f.Failing().empty());
}

TEST(IntegrityTrackerTest, NoticesABlockFreedAndHandedOutAgain) {
  Fixture f(IntegrityMode::kCheck);
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(f.Grow(s));
  const BlockId b = f.tables[1][0];
  f.pool->Release(b);  // a double release: the table still lists it
  EXPECT_EQ(f.Failing(), std::set<int32_t>{1}) << "a listed block that nobody holds";
  ASSERT_EQ(f.pool->Allocate(), b);  // and handed out again (by the free list)
  EXPECT_EQ(f.Failing(), std::set<int32_t>{1}) << "held again, under a new tag";
}

TEST(IntegrityTrackerTest, NoticesARetaggedBlock) {
  Fixture f(IntegrityMode::kCheck);
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(f.Grow(s));
  f.pool->RetagForTesting(f.tables[2][0]);
  EXPECT_EQ(f.Failing(), std::set<int32_t>{2});
}

TEST(IntegrityTrackerTest, NoticesSwappedTableEntries) {
  Fixture f(IntegrityMode::kCheck);
  for (int s = 0; s < 4; ++s) {
    ASSERT_TRUE(f.Grow(s));
    ASSERT_TRUE(f.Grow(s));
  }
  const BlockId a = f.tables[0][1], c = f.tables[3][0];
  // The swap carries the tags along, so the tables alone look consistent.
  f.tables[0].Replace(1, c, f.pool->integrity_tag(c));
  f.tables[3].Replace(0, a, f.pool->integrity_tag(a));
  EXPECT_TRUE(f.tables[0].Verify(*f.pool));
  EXPECT_EQ(f.Failing(), (std::set<int32_t>{0, 3}));
}

TEST(IntegrityTrackerTest, NoticesATableOfAnotherLength) {
  Fixture f(IntegrityMode::kCheck);
  ASSERT_TRUE(f.Grow(0));
  const BlockId b = f.pool->Allocate();
  f.tables[0].Append(b, f.pool->integrity_tag(b));  // not through the tracker
  std::vector<IntegrityFailure> out;
  const int32_t seq = 0;
  f.tracker->Check(std::span<const int32_t>(&seq, 1), f.table_ptrs, *f.pool, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].index, -1);
  EXPECT_NE(out[0].Describe().find("2 entries, 1 blocks"), std::string::npos) << out[0].Describe();
}

TEST(IntegrityTrackerTest, NoticesAnOutOfRangeId) {
  Fixture f(IntegrityMode::kCheck, 8);
  ASSERT_TRUE(f.Grow(0));
  f.tables[0].Replace(0, 1000, 1);
  EXPECT_EQ(f.Failing(), std::set<int32_t>{0});
}

TEST(IntegrityTrackerTest, ChecksOnlyTheSequencesAsked) {
  Fixture f(IntegrityMode::kCheck);
  for (int s = 0; s < 3; ++s) ASSERT_TRUE(f.Grow(s));
  f.pool->RetagForTesting(f.tables[2][0]);
  std::vector<IntegrityFailure> out;
  const std::vector<int32_t> asked = {0, 1};
  f.tracker->Check(asked, f.table_ptrs, *f.pool, &out);
  EXPECT_TRUE(out.empty());
}

TEST(IntegrityTrackerTest, ReleasableKeepsOnlyBlocksStillHeldUnderTheirTag) {
  Fixture f(IntegrityMode::kCheck);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(f.Grow(0));
  ASSERT_TRUE(f.Grow(1));
  const BlockTable t = f.tables[0];
  f.pool->RetagForTesting(t[1]);                   // in doubt: stays held
  f.pool->Release(t[2]);                           // freed and ...
  ASSERT_EQ(f.pool->Allocate(), t[2]);             // ... someone else's now
  const BlockId other = f.tables[1][0];
  f.tables[0].Replace(3, other, f.pool->integrity_tag(other));  // the table points elsewhere
  std::vector<BlockId> mine;
  f.tracker->Releasable(0, f.tables[0], *f.pool, &mine);
  EXPECT_EQ(mine, (std::vector<BlockId>{t[0], t[3]})) << "by the record, not the table";
}

TEST(IntegrityTrackerTest, OffReportsNothingAndReleasesTheTable) {
  Fixture f(IntegrityMode::kOff);
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(f.Grow(s));
  f.pool->RetagForTesting(f.tables[0][0]);
  EXPECT_TRUE(f.Failing().empty());
  std::vector<BlockId> mine;
  f.tracker->Releasable(0, f.tables[0], *f.pool, &mine);
  EXPECT_EQ(mine, f.tables[0].ids());
  EXPECT_EQ(f.tracker->mode(), IntegrityMode::kOff);
}

TEST(IntegrityTrackerTest, IntegrityErrorIsRecognised) {
  IntegrityFailure x;
  x.seq = 3;
  x.index = 2;
  const Status st = IntegrityError(x);
  EXPECT_EQ(st.code(), StatusCode::kDataLoss);
  EXPECT_TRUE(IsIntegrityError(st));
  EXPECT_FALSE(IsIntegrityError(DataLoss("truncated file")));
  EXPECT_FALSE(IsIntegrityError(Internal(st.message())));
}

// Long random histories: allocation, prefix sharing, copy-on-write,
// truncation and sequence removal never raise a false alarm; then one random
// corruption fails exactly the sequences whose blocks it touched.
TEST(IntegrityTrackerTest, RandomHistoriesHaveNoFalseAlarmsAndCatchEachFault) {
  std::mt19937 rng(2026);
  for (int round = 0; round < 200; ++round) {
    Fixture f(IntegrityMode::kCheck, 48);
    for (int op = 0; op < 300; ++op) {
      const int s = static_cast<int>(rng() % kSeqs);
      switch (rng() % 6) {
        case 0:
        case 1:
          f.Grow(s);
          break;
        case 2: {  // adopt another sequence's block
          const int o = static_cast<int>(rng() % kSeqs);
          if (!f.tables[o].empty()) f.Share(s, f.tables[o][static_cast<int32_t>(rng() % f.tables[o].size())]);
          break;
        }
        case 3:
          if (!f.tables[s].empty() && f.pool->n_available() > 0) {
            f.CopyOnWrite(s, static_cast<int32_t>(rng() % f.tables[s].size()));
          }
          break;
        case 4:
          f.Truncate(s, f.tables[s].empty() ? 0 : static_cast<int>(rng() % f.tables[s].size()));
          break;
        case 5:
          if (rng() % 4 == 0) f.Truncate(s, 0);
          break;
      }
      ASSERT_TRUE(f.Failing().empty()) << "false alarm in round " << round << " after op " << op;
    }
    // One fault on a random block of a random non-empty sequence.
    std::vector<int> nonempty;
    for (int s = 0; s < kSeqs; ++s) {
      if (!f.tables[s].empty()) nonempty.push_back(s);
    }
    if (nonempty.empty()) continue;
    const int s = nonempty[rng() % nonempty.size()];
    const int32_t i = static_cast<int32_t>(rng() % f.tables[s].size());
    const BlockId b = f.tables[s][i];
    // Every sequence that lists b is affected by a retag.
    std::set<int32_t> holders;
    for (int o = 0; o < kSeqs; ++o) {
      const auto& ids = f.tables[o].ids();
      if (std::find(ids.begin(), ids.end(), b) != ids.end()) holders.insert(o);
    }
    switch (rng() % 2) {
      case 0:
        f.pool->RetagForTesting(b);
        EXPECT_EQ(f.Failing(), holders) << "retag, round " << round;
        break;
      case 1: {  // point entry i at a block this sequence was not given
        BlockId other = f.pool->Allocate();
        if (other == kNoBlock) continue;
        f.tables[s].Replace(i, other, f.pool->integrity_tag(other));
        EXPECT_EQ(f.Failing(), std::set<int32_t>{s}) << "redirected entry, round " << round;
        break;
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kv
