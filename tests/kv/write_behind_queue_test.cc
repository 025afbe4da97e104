#include "kv/write_behind_queue.h"

#include <condition_variable>
#include <mutex>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace pagoda::kv {
namespace {

constexpr int32_t kBlockSize = 4;
constexpr size_t kBlockBytes = 64;

struct Block {
  BlockHash hash;
  BlockHash parent;
  std::vector<int32_t> tokens;
  std::vector<uint8_t> payload;
};

Block MakeBlock(uint64_t id) {
  Block b;
  b.hash = BlockHash{id, ~id};
  b.parent = BlockHash{id - 1, 0};
  b.tokens.resize(kBlockSize);
  std::iota(b.tokens.begin(), b.tokens.end(), static_cast<int32_t>(id * 10));
  b.payload.resize(kBlockBytes);
  for (size_t i = 0; i < b.payload.size(); ++i) b.payload[i] = static_cast<uint8_t>(id * 31 + i);
  return b;
}

// A write function that records what it wrote and, while closed, holds the
// writer inside its first call.
class Sink {
 public:
  WriteBehindQueue::WriteFn Fn() {
    return [this](const QueuedBlock& b) {
      std::unique_lock<std::mutex> lock(mu_);
      ++entered_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
      written_.push_back(b);
    };
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= n; });
  }
  std::vector<QueuedBlock> written() {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int entered_ = 0;
  std::vector<QueuedBlock> written_;
};

bool Push(WriteBehindQueue& q, const Block& b) { return q.Push(b.hash, b.parent, b.tokens, b.payload); }

TEST(WriteBehindQueueTest, WritesEveryBlockInOrderAndFlushWaitsForThem) {
  Sink sink;
  WriteBehindQueue q("test-writer", 8, sink.Fn());
  std::vector<Block> blocks;
  for (uint64_t i = 1; i <= 20; ++i) {
    blocks.push_back(MakeBlock(i));
    while (!Push(q, blocks.back())) q.Flush();  // full: let the writer catch up
  }
  q.Flush();
  EXPECT_EQ(q.depth(), 0);
  const std::vector<QueuedBlock> written = sink.written();
  ASSERT_EQ(written.size(), blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(written[i].hash, blocks[i].hash);
    EXPECT_EQ(written[i].parent, blocks[i].parent);
    EXPECT_EQ(written[i].tokens, blocks[i].tokens);
    EXPECT_EQ(written[i].payload, blocks[i].payload);  // buffers reused, contents not mixed up
  }
}

TEST(WriteBehindQueueTest, FullQueueAndDuplicatesAreRefusedAndQueuedBlocksAreReadable) {
  Sink sink;
  sink.Close();
  WriteBehindQueue q("test-writer", 2, sink.Fn());
  const Block a = MakeBlock(1), b = MakeBlock(2), c = MakeBlock(3);
  ASSERT_TRUE(Push(q, a));
  sink.WaitEntered(1);  // the writer holds a
  EXPECT_TRUE(Push(q, b));
  EXPECT_FALSE(Push(q, c));  // a (being written) and b fill it
  EXPECT_FALSE(Push(q, b));  // queued already
  EXPECT_EQ(q.depth(), 2);
  EXPECT_TRUE(q.Contains(a.hash));  // until its write returns
  EXPECT_TRUE(q.Contains(b.hash));
  EXPECT_FALSE(q.Contains(c.hash));

  std::vector<uint8_t> out(kBlockBytes, 0xEE);
  EXPECT_FALSE(q.CopyQueued(c.hash, out.data()).has_value());
  EXPECT_EQ(out, std::vector<uint8_t>(kBlockBytes, 0xEE));
  const auto rec = q.CopyQueued(a.hash, out.data());
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(out, a.payload);
  EXPECT_EQ(rec->hash, a.hash);
  EXPECT_EQ(rec->parent, a.parent);
  EXPECT_EQ(rec->tokens, a.tokens);

  sink.Open();
  q.Flush();
  EXPECT_EQ(q.depth(), 0);
  EXPECT_FALSE(q.Contains(a.hash));
  EXPECT_TRUE(Push(q, c));
  EXPECT_TRUE(Push(q, a));  // written and gone: a new write
  q.Flush();
  EXPECT_EQ(sink.written().size(), 4u);
}

TEST(WriteBehindQueueTest, DestructorWritesWhatIsQueued) {
  Sink sink;
  sink.Close();
  {
    WriteBehindQueue q("test-writer", 4, sink.Fn());
    for (uint64_t i = 1; i <= 4; ++i) ASSERT_TRUE(Push(q, MakeBlock(i)));
    sink.WaitEntered(1);
    sink.Open();
  }
  EXPECT_EQ(sink.written().size(), 4u);
}

}  // namespace
}  // namespace pagoda::kv
