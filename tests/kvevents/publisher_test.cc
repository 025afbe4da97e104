#include "kvevents/publisher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "kvevents/kv_event_codec.h"
#include "kvevents/kv_events_test_util.h"

namespace pagoda::kvevents {
namespace {

using testing::TaggedBatch;

PublisherOptions LoopbackOptions() {
  PublisherOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.replay_endpoint = "tcp://127.0.0.1:*";
  return o;
}

// Independent of the code under test: 8 bytes, big-endian, read by hand.
uint64_t BigEndian(const zmq::message_t& m) {
  EXPECT_EQ(m.size(), 8u);
  const auto* p = static_cast<const uint8_t*>(m.data());
  uint64_t v = 0;
  for (size_t i = 0; i < m.size(); ++i) v = v << 8 | p[i];
  return v;
}

bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

TEST(PublisherTest, BindsEphemeralPorts) {
  auto pub = Publisher::Create(LoopbackOptions());
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_EQ((*pub)->endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << (*pub)->endpoint();
  EXPECT_NE((*pub)->endpoint(), (*pub)->replay_endpoint());
}

TEST(PublisherTest, RefusesBadEndpointNamingIt) {
  PublisherOptions o = LoopbackOptions();
  o.endpoint = "nonsense://x";
  auto pub = Publisher::Create(o);
  ASSERT_FALSE(pub.ok());
  EXPECT_NE(pub.status().message().find("nonsense://x"), std::string::npos) << pub.status().ToString();
  o = LoopbackOptions();
  o.replay_endpoint = "tcp://127.0.0.1:notaport";
  EXPECT_FALSE(Publisher::Create(o).ok());
}

TEST(PublisherTest, SendsVllmFramesOnPub) {
  PublisherOptions o = LoopbackOptions();
  o.topic = "kv";
  auto pub = Publisher::Create(o);
  ASSERT_TRUE(pub.ok());
  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "kv");
  sub.connect((*pub)->endpoint());
  // PUB drops until the subscription arrives: publish until one gets through.
  std::vector<zmq::message_t> frames;
  sub.set(zmq::sockopt::rcvtimeo, 20);
  int sent = 0;
  while (frames.empty() && sent < 500) {
    (*pub)->Publish(TaggedBatch(100 + sent));
    ++sent;
    (void)zmq::recv_multipart(sub, std::back_inserter(frames));
  }
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].to_string(), "kv");
  const uint64_t seq = BigEndian(frames[1]);
  auto batch = DecodeBatch(frames[2].to_string_view());
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EventBatch want = TaggedBatch(100 + static_cast<double>(seq));
  want.data_parallel_rank = 0;  // set by the publisher, as vLLM's does
  EXPECT_EQ(*batch, want);
}

TEST(PublisherTest, ReplaysBufferedBatchesFromStartSeq) {
  PublisherOptions o = LoopbackOptions();
  o.buffer_steps = 6;
  auto pub = Publisher::Create(o);
  ASSERT_TRUE(pub.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*pub)->Publish(TaggedBatch(i)));
  ASSERT_TRUE(WaitUntil([&] { return (*pub)->stats().published == 10; }));
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 5000);
  dealer.connect((*pub)->replay_endpoint());
  // vLLM's request: an empty delimiter, then the start seq as 8 bytes big-endian.
  const std::string start("\0\0\0\0\0\0\0\x02", 8);
  std::vector<zmq::const_buffer> req{zmq::const_buffer(), zmq::buffer(start)};
  ASSERT_TRUE(zmq::send_multipart(dealer, req));
  std::vector<uint64_t> seqs;
  for (;;) {
    std::vector<zmq::message_t> f;
    ASSERT_TRUE(zmq::recv_multipart(dealer, std::back_inserter(f)));
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[0].size(), 0u);
    const uint64_t seq = BigEndian(f[1]);
    if (seq == ~uint64_t{0}) {
      EXPECT_EQ(f[2].size(), 0u);
      break;
    }
    auto b = DecodeBatch(f[2].to_string_view());
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->ts, static_cast<double>(seq));
    seqs.push_back(seq);
  }
  // The buffer holds the last 6 (4..9); all of them are >= 2.
  EXPECT_EQ(seqs, (std::vector<uint64_t>{4, 5, 6, 7, 8, 9}));
  EXPECT_EQ((*pub)->stats().replayed, 6);
}

TEST(PublisherTest, CountsMalformedReplayRequests) {
  auto pub = Publisher::Create(LoopbackOptions());
  ASSERT_TRUE(pub.ok());
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  dealer.connect((*pub)->replay_endpoint());
  std::vector<zmq::const_buffer> req{zmq::const_buffer(), zmq::str_buffer("short")};
  ASSERT_TRUE(zmq::send_multipart(dealer, req));
  EXPECT_TRUE(WaitUntil([&] { return (*pub)->stats().malformed_requests == 1; }));
}

TEST(PublisherTest, SubscriberThatNeverReadsNeverBlocks) {
  PublisherOptions o = LoopbackOptions();
  o.hwm = 10;
  auto pub = Publisher::Create(o);
  ASSERT_TRUE(pub.ok());
  zmq::context_t ctx;
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::rcvhwm, 1);
  sub.set(zmq::sockopt::subscribe, "");
  sub.connect((*pub)->endpoint());  // and never reads
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  constexpr int kN = 3000;
  for (int i = 0; i < kN; ++i) ASSERT_TRUE((*pub)->Publish(TaggedBatch(i, 16, 16)));
  // The sender thread gets through all of them: the stuck peer only loses messages.
  EXPECT_TRUE(WaitUntil([&] { return (*pub)->stats().published == kN; }));
  EXPECT_EQ((*pub)->stats().dropped, 0);
}

TEST(PublisherTest, DropsAndCountsWhenQueueIsFull) {
  PublisherOptions o = LoopbackOptions();
  o.max_queue = 2;
  auto pub = Publisher::Create(o);
  ASSERT_TRUE(pub.ok());
  // Big batches take the sender far longer to encode than Publish takes to queue.
  std::vector<EventBatch> batches;
  for (int i = 0; i < 40; ++i) batches.push_back(TaggedBatch(i, 4096, 16));
  int refused = 0;
  for (EventBatch& b : batches) refused += !(*pub)->Publish(std::move(b));
  EXPECT_GT(refused, 0);
  EXPECT_TRUE(WaitUntil([&] { return (*pub)->stats().published + (*pub)->stats().dropped == 40; }));
  EXPECT_EQ((*pub)->stats().dropped, refused);
}

}  // namespace
}  // namespace pagoda::kvevents
