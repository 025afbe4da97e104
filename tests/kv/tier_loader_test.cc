// TierLoader against a real DiskTier: a chain written block by block (the
// hashes from kv::BlockHasher, as the prefix cache makes them) is staged on
// the loader thread byte for byte, in order; the chain stops at a missing
// or corrupted block; a cancelled or replaced request leaves nothing; ready
// chains nobody takes are dropped past max_ready.
#include "kv/tier_loader.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kv/disk_tier.h"
#include "kv/tier_test_blocks.h"
#include "support/test_paths.h"

namespace pagoda::kv {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kBs = 4;

BlockLayout Layout() { return testing::TestLayout(0xfeed); }

std::vector<uint8_t> Payload(const BlockLayout& l, int i) {
  std::vector<uint8_t> p(l.block_bytes);
  for (size_t j = 0; j < p.size(); ++j) p[j] = static_cast<uint8_t>(i * 31 + j * 5);
  return p;
}

class TierLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::pagoda::testing::TempDirForProcess() /
           (std::string("tier_loader_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    DiskTierOptions o;
    o.dir = dir_.string();
    o.layout = layout_;
    o.max_bytes = 1000 * layout_.RecordBytes();
    auto t = DiskTier::Open(o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    disk_ = std::move(t).value();
    for (int32_t i = 0; i < 6 * kBs; ++i) tokens_.push_back(100 + i);
    BlockHasher hasher(kBs);
    root_ = hasher.Root("salt");
    BlockHash parent = root_;
    for (int i = 0; i < 6; ++i) {
      const std::span<const int32_t> t(tokens_.data() + i * kBs, kBs);
      hashes_.push_back(hasher.Next(parent, t));
      parents_.push_back(parent);
      parent = hashes_.back();
    }
  }
  void TearDown() override {
    disk_.reset();
    fs::remove_all(dir_);
  }
  void Put(int i) {
    const std::vector<uint8_t> p = Payload(layout_, i);
    ASSERT_TRUE(disk_->Put(hashes_[i], parents_[i], std::span<const int32_t>(tokens_.data() + i * kBs, kBs), p.data()));
  }
  static void WaitReady(const TierLoader& l, uint64_t key) {
    for (int i = 0; i < 5000 && l.state(key) == TierLoader::State::kPending; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(l.state(key), TierLoader::State::kReady);
  }
  TierLoaderOptions Options() const {
    TierLoaderOptions o;
    o.block_size = kBs;
    o.block_bytes = layout_.block_bytes;
    return o;
  }

  BlockLayout layout_ = Layout();
  fs::path dir_;
  std::unique_ptr<DiskTier> disk_;
  std::vector<int32_t> tokens_;
  std::vector<BlockHash> hashes_, parents_;
  BlockHash root_;
};

TEST_F(TierLoaderTest, StagesTheChainInOrderUntilAMissingBlock) {
  for (int i : {0, 1, 2, 4, 5}) Put(i);  // block 3 missing
  disk_->Flush();
  TierLoader loader({disk_.get()}, Options());
  EXPECT_EQ(loader.state(7), TierLoader::State::kNone);
  loader.Request(7, tokens_, root_);
  WaitReady(loader, 7);
  EXPECT_EQ(loader.pending(), 0u);
  std::vector<StagedBlock> got = loader.Take(7);
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got[i].hash, hashes_[i]);
    EXPECT_EQ(got[i].parent, parents_[i]);
    EXPECT_EQ(got[i].payload, Payload(layout_, i));
  }
  EXPECT_EQ(loader.state(7), TierLoader::State::kNone);  // taken: forgotten
  EXPECT_TRUE(loader.Take(7).empty());
  // From the middle of the chain: blocks 4 and 5 after block 3's hash.
  loader.Request(8, std::span<const int32_t>(tokens_).subspan(4 * kBs), hashes_[3]);
  WaitReady(loader, 8);
  got = loader.Take(8);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].payload, Payload(layout_, 5));
  const TierLoaderStats s = loader.stats();
  EXPECT_EQ(s.requests, 2);
  EXPECT_EQ(s.blocks, 5);
  EXPECT_EQ(s.failures, 0);
}

TEST_F(TierLoaderTest, ACorruptedBlockEndsTheChainAndIsNeverStaged) {
  for (int i = 0; i < 4; ++i) Put(i);
  disk_->Flush();
  // Flip a payload byte of block 2's file.
  bool flipped = false;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    if (!e.is_regular_file() || e.path().extension() != ".kvb") continue;
    if (e.path().stem().string() != hashes_[2].ToHex()) continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(kBlockFileFixedHeader + 4 * kBs + 3));  // a payload byte
    f.put('\x7f');
    flipped = true;
  }
  ASSERT_TRUE(flipped) << "block 2's file not found under " << dir_;
  TierLoader loader({disk_.get()}, Options());
  loader.Request(1, tokens_, root_);
  WaitReady(loader, 1);
  EXPECT_EQ(loader.Take(1).size(), 2u);
  EXPECT_EQ(loader.stats().failures, 1);
  EXPECT_FALSE(disk_->Contains(hashes_[2]));  // the tier deleted it
}

TEST_F(TierLoaderTest, WrongParentStagesNothing) {
  for (int i = 0; i < 3; ++i) Put(i);
  disk_->Flush();
  TierLoader loader({disk_.get()}, Options());
  BlockHasher hasher(kBs);
  loader.Request(1, tokens_, hasher.Root("another tenant"));
  WaitReady(loader, 1);
  EXPECT_TRUE(loader.Take(1).empty());
}

TEST_F(TierLoaderTest, CancelledAndUntakenRequestsLeaveNothing) {
  for (int i = 0; i < 6; ++i) Put(i);
  disk_->Flush();
  TierLoaderOptions o = Options();
  o.max_ready = 2;
  TierLoader loader({disk_.get()}, o);
  loader.Request(1, tokens_, root_);
  loader.Cancel(1);
  EXPECT_EQ(loader.state(1), TierLoader::State::kNone);
  for (uint64_t k = 10; k < 14; ++k) loader.Request(k, tokens_, root_);
  for (int i = 0; i < 5000 && loader.pending() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(loader.pending(), 0u);
  // Only the two most recent ready chains are kept.
  EXPECT_EQ(loader.state(10), TierLoader::State::kNone);
  EXPECT_EQ(loader.state(11), TierLoader::State::kNone);
  EXPECT_EQ(loader.Take(12).size(), 6u);
  EXPECT_EQ(loader.Take(13).size(), 6u);
  EXPECT_EQ(loader.stats().dropped, 2);
}

}  // namespace
}  // namespace pagoda::kv
