#include "kv/disk_tier.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "kv/tier_test_blocks.h"

#include "support/test_paths.h"

namespace pagoda::kv {
namespace {

namespace fs = std::filesystem;
using kernels::KvType;

constexpr uint64_t kModel = testing::kTestModel;

BlockLayout Layout(uint64_t fingerprint = kModel, KvType type = KvType::kF16) {
  return testing::TestLayout(fingerprint, type);
}
using Block = testing::TestBlock;
Block MakeBlock(const BlockLayout& l, uint64_t id) { return testing::MakeTestBlock(l, id); }

class DiskTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::pagoda::testing::TempDirForProcess() /
           (std::string("disk_tier_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  DiskTierOptions Options(int64_t max_blocks = 100, const BlockLayout& l = Layout()) const {
    DiskTierOptions o;
    o.dir = dir_.string();
    o.layout = l;
    o.max_bytes = max_blocks * l.RecordBytes();
    return o;
  }
  std::unique_ptr<DiskTier> Open(const DiskTierOptions& o) const {
    auto t = DiskTier::Open(o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(t).value() : nullptr;
  }
  fs::path FileOf(const BlockHash& h, uint64_t model = kModel) const {
    char fp[17];
    std::snprintf(fp, sizeof(fp), "%016llx", static_cast<unsigned long long>(model));
    return dir_ / fp / (h.ToHex() + ".kvb");
  }
  // A fresh tier that has written block `id` (returned in `b`).
  std::unique_ptr<DiskTier> OpenHolding(uint64_t id, Block* b) const {
    auto t = Open(Options());
    if (t) {
      *b = MakeBlock(t->layout(), id);
      EXPECT_TRUE(Put(*t, *b));
      t->Flush();
    }
    return t;
  }
  static bool Put(DiskTier& t, const Block& b) { return t.Put(b.hash, b.parent, b.tokens, b.payload.data()); }
  // Gets `b` and checks it bitwise.
  static void ExpectGet(DiskTier& t, const Block& b) {
    std::vector<uint8_t> out(t.layout().block_bytes, 0);
    auto r = t.Get(b.hash, out.data());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(out, b.payload);
    EXPECT_EQ(r->hash, b.hash);
    EXPECT_EQ(r->parent, b.parent);
    EXPECT_EQ(r->tokens, b.tokens);
  }

  fs::path dir_;
};

TEST_F(DiskTierTest, RoundTripsABlockBitwise) {
  Block b;
  auto t = OpenHolding(1, &b);
  ASSERT_TRUE(t);
  EXPECT_TRUE(fs::exists(FileOf(b.hash)));
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(FileOf(b.hash))), t->layout().RecordBytes());
  EXPECT_TRUE(t->Contains(b.hash));
  ExpectGet(*t, b);
  const KvTierStats s = t->stats();
  EXPECT_EQ(s.blocks, 1);
  EXPECT_EQ(s.bytes, t->layout().RecordBytes());
  EXPECT_EQ(s.queued, 0);
  EXPECT_EQ(s.writes, 1);
  EXPECT_EQ(s.write_bytes, t->layout().RecordBytes());
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.read_bytes, t->layout().RecordBytes());
  EXPECT_GE(s.read_seconds, 0.0);
  EXPECT_GT(s.write_seconds, 0.0);
}

TEST_F(DiskTierTest, MissIsNotFound) {
  auto t = Open(Options());
  ASSERT_TRUE(t);
  std::vector<uint8_t> out(t->layout().block_bytes, 0xEE);
  EXPECT_FALSE(t->Contains(BlockHash{1, 2}));
  EXPECT_EQ(t->Get(BlockHash{1, 2}, out.data()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(t->stats().misses, 1);
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0xEE));
}

TEST_F(DiskTierTest, BlocksSurviveARestart) {
  const BlockLayout l = Layout();
  std::vector<Block> blocks;
  for (uint64_t i = 1; i <= 5; ++i) blocks.push_back(MakeBlock(l, i));
  {
    auto t = Open(Options());
    ASSERT_TRUE(t);
    for (const Block& b : blocks) EXPECT_TRUE(Put(*t, b));
  }  // the destructor writes what is queued
  auto t = Open(Options());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats().blocks, 5);
  EXPECT_EQ(t->stats().bytes, 5 * l.RecordBytes());
  for (const Block& b : blocks) {
    EXPECT_TRUE(t->Contains(b.hash));
    ExpectGet(*t, b);
  }
  EXPECT_FALSE(Put(*t, blocks[0]));  // stored already
  EXPECT_EQ(t->stats().dropped, 1);
}

// A restarted tier hands over what its scan found, once, with each
// record's parent and tokens (for the engine's KV events); a fresh tier
// found nothing.
TEST_F(DiskTierTest, HandsOverTheBlocksItFoundAtOpenOnce) {
  const BlockLayout l = Layout();
  std::vector<Block> blocks;
  for (uint64_t i = 1; i <= 4; ++i) blocks.push_back(MakeBlock(l, i));
  {
    auto t = Open(Options());
    ASSERT_TRUE(t);
    std::vector<BlockRecord> none;
    t->TakeOpened(&none);
    EXPECT_TRUE(none.empty());
    for (const Block& b : blocks) EXPECT_TRUE(Put(*t, b));
  }
  auto t = Open(Options());
  ASSERT_TRUE(t);
  std::vector<BlockRecord> got;
  t->TakeOpened(&got);
  ASSERT_EQ(got.size(), blocks.size());
  std::sort(got.begin(), got.end(), [](const BlockRecord& a, const BlockRecord& b) { return a.hash.lo < b.hash.lo; });
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.hash.lo < b.hash.lo; });
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(got[i].hash, blocks[i].hash);
    EXPECT_EQ(got[i].parent, blocks[i].parent);
    EXPECT_EQ(got[i].tokens, blocks[i].tokens);
  }
  std::vector<BlockRecord> again;
  t->TakeOpened(&again);
  EXPECT_TRUE(again.empty());
}

// Files the size bound deletes at open are neither handed over nor reported removed.
TEST_F(DiskTierTest, OpenedBlocksLeaveOutWhatTheBoundDeleted) {
  const BlockLayout l = Layout();
  {
    auto t = Open(Options(10));
    ASSERT_TRUE(t);
    for (uint64_t i = 1; i <= 6; ++i) EXPECT_TRUE(Put(*t, MakeBlock(l, i)));
  }
  auto t = Open(Options(3));
  ASSERT_TRUE(t);
  std::vector<BlockRecord> got;
  t->TakeOpened(&got);
  ASSERT_EQ(got.size(), 3u);
  for (const BlockRecord& r : got) EXPECT_TRUE(t->Contains(r.hash));
  std::vector<BlockHash> removed;
  t->TakeRemoved(&removed);
  EXPECT_TRUE(removed.empty());
}

TEST_F(DiskTierTest, CorruptFileIsDataLossAndDeleted) {
  Block b;
  auto t = OpenHolding(3, &b);
  ASSERT_TRUE(t);
  {
    std::fstream f(FileOf(b.hash), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f);
    const std::streamoff at = 96 + 4 * 4 + 17;  // inside the payload
    f.seekg(at);
    char c = 0;
    f.get(c);
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x10));
  }
  std::vector<uint8_t> out(t->layout().block_bytes, 0xEE);
  EXPECT_EQ(t->Get(b.hash, out.data()).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0xEE));
  EXPECT_FALSE(fs::exists(FileOf(b.hash)));
  EXPECT_FALSE(t->Contains(b.hash));
  const KvTierStats s = t->stats();
  EXPECT_EQ(s.corrupt, 1);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.blocks, 0);
  EXPECT_EQ(s.bytes, 0);
  EXPECT_EQ(t->Get(b.hash, out.data()).status().code(), StatusCode::kNotFound);
  // Stored again once it is gone.
  EXPECT_TRUE(Put(*t, b));
  t->Flush();
  ExpectGet(*t, b);
}

TEST_F(DiskTierTest, TruncatedFileIsRefusedAndDeleted) {
  Block b;
  auto t = OpenHolding(4, &b);
  ASSERT_TRUE(t);
  fs::resize_file(FileOf(b.hash), 150);
  std::vector<uint8_t> out(t->layout().block_bytes);
  EXPECT_EQ(t->Get(b.hash, out.data()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(FileOf(b.hash)));
  EXPECT_EQ(t->stats().corrupt, 1);
}

TEST_F(DiskTierTest, SizeBoundDeletesTheLeastRecentlyUsed) {
  auto t = Open(Options(/*max_blocks=*/3));
  ASSERT_TRUE(t);
  const BlockLayout& l = t->layout();
  const Block a = MakeBlock(l, 1), b = MakeBlock(l, 2), c = MakeBlock(l, 3), d = MakeBlock(l, 4);
  for (const Block* x : {&a, &b, &c}) {
    ASSERT_TRUE(Put(*t, *x));
    t->Flush();
  }
  ExpectGet(*t, a);  // a is now the most recently used; b the least
  ASSERT_TRUE(Put(*t, d));
  t->Flush();
  EXPECT_TRUE(t->Contains(a.hash));
  EXPECT_FALSE(t->Contains(b.hash));
  EXPECT_FALSE(fs::exists(FileOf(b.hash)));
  EXPECT_TRUE(t->Contains(c.hash));
  EXPECT_TRUE(t->Contains(d.hash));
  const KvTierStats s = t->stats();
  EXPECT_EQ(s.deleted, 1);
  EXPECT_EQ(s.blocks, 3);
  EXPECT_EQ(s.bytes, 3 * l.RecordBytes());
}

TEST_F(DiskTierTest, OpenDeletesTheOldestFilesPastTheBound) {
  const BlockLayout l = Layout();
  const Block a = MakeBlock(l, 1), b = MakeBlock(l, 2), c = MakeBlock(l, 3);
  {
    auto t = Open(Options());
    ASSERT_TRUE(t);
    for (const Block* x : {&a, &b, &c}) ASSERT_TRUE(Put(*t, *x));
  }
  // Write times, not names or write order, decide: b oldest, then c, then a.
  const auto now = fs::file_time_type::clock::now();
  fs::last_write_time(FileOf(b.hash), now - std::chrono::hours(3));
  fs::last_write_time(FileOf(c.hash), now - std::chrono::hours(2));
  fs::last_write_time(FileOf(a.hash), now - std::chrono::hours(1));
  auto t = Open(Options(/*max_blocks=*/2));
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->Contains(b.hash));
  EXPECT_FALSE(fs::exists(FileOf(b.hash)));
  EXPECT_TRUE(t->Contains(c.hash));
  EXPECT_TRUE(t->Contains(a.hash));
  EXPECT_EQ(t->stats().deleted, 1);
  // c is the least recently used now.
  const Block d = MakeBlock(l, 4);
  ASSERT_TRUE(Put(*t, d));
  t->Flush();
  EXPECT_FALSE(t->Contains(c.hash));
  EXPECT_TRUE(t->Contains(a.hash));
}

TEST_F(DiskTierTest, AnotherModelDoesNotSeeTheBlocks) {
  const Block b = MakeBlock(Layout(), 5);
  auto mine = Open(Options());
  ASSERT_TRUE(mine);
  ASSERT_TRUE(Put(*mine, b));
  mine->Flush();
  auto other = Open(Options(100, Layout(kModel + 1)));
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->Contains(b.hash));
  std::vector<uint8_t> out(other->layout().block_bytes);
  EXPECT_EQ(other->Get(b.hash, out.data()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(other->stats().blocks, 0);
  EXPECT_TRUE(fs::exists(FileOf(b.hash)));  // left alone
  ExpectGet(*mine, b);
}

TEST_F(DiskTierTest, AnotherLayoutOfTheSameModelIsDeletedAtOpen) {
  const Block b = MakeBlock(Layout(), 6);
  {
    auto t = Open(Options());
    ASSERT_TRUE(t);
    ASSERT_TRUE(Put(*t, b));
  }
  auto t = Open(Options(100, Layout(kModel, KvType::kBf16)));
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->Contains(b.hash));
  EXPECT_FALSE(fs::exists(FileOf(b.hash)));
  EXPECT_EQ(t->stats().corrupt, 1);
}

TEST_F(DiskTierTest, OpenRemovesStaleAndUnusableFiles) {
  const BlockLayout l = Layout();
  const Block a = MakeBlock(l, 1), b = MakeBlock(l, 2);
  {
    auto t = Open(Options());
    ASSERT_TRUE(t);
    ASSERT_TRUE(Put(*t, a));
  }
  const fs::path model_dir = FileOf(a.hash).parent_path();
  const fs::path tmp = model_dir / ("." + b.hash.ToHex() + ".tmp");
  const fs::path misnamed = FileOf(b.hash);  // a's record under b's name
  const fs::path junk = model_dir / "0123.kvb";
  const fs::path short_file = FileOf(BlockHash{7, 7});
  const fs::path other = model_dir / "notes.txt";
  fs::copy_file(FileOf(a.hash), tmp);
  fs::copy_file(FileOf(a.hash), misnamed);
  std::ofstream(junk) << "not a block";
  fs::copy_file(FileOf(a.hash), short_file);
  fs::resize_file(short_file, l.RecordBytes() - 1);
  std::ofstream(other) << "kept";
  auto t = Open(Options());
  ASSERT_TRUE(t);
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_FALSE(fs::exists(misnamed));
  EXPECT_FALSE(fs::exists(junk));
  EXPECT_FALSE(fs::exists(short_file));
  EXPECT_TRUE(fs::exists(other));  // not a block file: not ours to delete
  EXPECT_EQ(t->stats().corrupt, 3);
  EXPECT_EQ(t->stats().blocks, 1);
  ExpectGet(*t, a);
}

TEST_F(DiskTierTest, FullQueueDropsAndQueuedBlocksAreServed) {
  DiskTierOptions o = Options();
  o.max_queued = 2;
  auto t = Open(o);
  ASSERT_TRUE(t);
  const BlockLayout& l = t->layout();
  const Block a = MakeBlock(l, 1), b = MakeBlock(l, 2), c = MakeBlock(l, 3);
  // Hold the writer: a FIFO at a's temporary name blocks its open() until we read.
  const fs::path fifo = FileOf(a.hash).parent_path() / ("." + a.hash.ToHex() + ".tmp");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_TRUE(Put(*t, a));
  EXPECT_TRUE(Put(*t, b));
  EXPECT_FALSE(Put(*t, c));  // full
  EXPECT_FALSE(Put(*t, b));  // queued already
  KvTierStats s = t->stats();
  EXPECT_EQ(s.queued, 2);
  EXPECT_EQ(s.dropped, 2);
  EXPECT_TRUE(t->Contains(a.hash));
  EXPECT_TRUE(t->Contains(b.hash));
  EXPECT_FALSE(t->Contains(c.hash));
  ExpectGet(*t, a);  // from the queue, while its write is stuck
  ExpectGet(*t, b);
  EXPECT_EQ(t->stats().hits, 2);
  EXPECT_EQ(t->stats().read_bytes, 0);

  // Release the writer; what it wrote is a's record.
  std::vector<uint8_t> written;
  const int fd = ::open(fifo.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  uint8_t chunk[4096];
  for (ssize_t n; (n = ::read(fd, chunk, sizeof(chunk))) > 0;) written.insert(written.end(), chunk, chunk + n);
  ::close(fd);
  t->Flush();
  std::vector<uint8_t> out(l.block_bytes);
  auto rec = DecodeBlock(l, written, out.data());
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->hash, a.hash);
  EXPECT_EQ(out, a.payload);
  s = t->stats();
  EXPECT_EQ(s.queued, 0);
  EXPECT_EQ(s.writes, 2);
  ExpectGet(*t, b);  // from its file now
  EXPECT_EQ(t->stats().read_bytes, l.RecordBytes());
}

TEST_F(DiskTierTest, ConcurrentGetsSeeWholeBlocksOrNothing) {
  // Writes, evictions (a bound of 8 blocks) and Gets from other threads race;
  // a Get returns the exact block or NotFound, and no file is ever refused.
  auto t = Open(Options(/*max_blocks=*/8));
  ASSERT_TRUE(t);
  const BlockLayout& l = t->layout();
  constexpr int kBlocks = 200;
  std::vector<Block> blocks;
  for (int i = 0; i < kBlocks; ++i) blocks.push_back(MakeBlock(l, i + 1));
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      std::vector<uint8_t> out(l.block_bytes);
      for (int i = r; !done.load(); i = (i + 7) % kBlocks) {
        auto got = t->Get(blocks[i].hash, out.data());
        if (got.ok() ? (out != blocks[i].payload || got->tokens != blocks[i].tokens)
                     : got.status().code() != StatusCode::kNotFound) {
          ++wrong;
        }
      }
    });
  }
  for (const Block& b : blocks) {
    while (!Put(*t, b) && !t->Contains(b.hash)) std::this_thread::yield();  // queue full: retry
  }
  t->Flush();
  done = true;
  for (std::thread& th : readers) th.join();
  EXPECT_EQ(wrong.load(), 0);
  const KvTierStats s = t->stats();
  EXPECT_EQ(s.corrupt, 0);
  EXPECT_EQ(s.writes, kBlocks);
  EXPECT_EQ(s.blocks, 8);
  EXPECT_EQ(s.deleted, kBlocks - 8);
  int kept = 0;  // which ones depends on the readers' refreshes
  for (const Block& b : blocks) {
    if (!t->Contains(b.hash)) continue;
    ++kept;
    ExpectGet(*t, b);
  }
  EXPECT_EQ(kept, 8);
}

TEST_F(DiskTierTest, OpenRefusesBadOptions) {
  DiskTierOptions o = Options();
  o.dir.clear();
  EXPECT_EQ(DiskTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.max_bytes = o.layout.RecordBytes() - 1;
  EXPECT_EQ(DiskTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.layout.block_bytes += 1;  // not what a pool of this layout has
  EXPECT_EQ(DiskTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.max_queued = 0;
  EXPECT_EQ(DiskTier::Open(o).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.dir = "/proc/pagoda_no_such_dir";
  EXPECT_FALSE(DiskTier::Open(o).ok());
}

}  // namespace
}  // namespace pagoda::kv
