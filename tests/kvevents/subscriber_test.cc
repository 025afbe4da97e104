#include "kvevents/subscriber.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "kvevents/kv_event_codec.h"
#include "kvevents/kv_events_test_util.h"
#include "kvevents/publisher.h"

namespace pagoda::kvevents {
namespace {

using testing::IsReset;
using testing::Recorder;
using testing::TaggedBatch;

std::string Be64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 7; i >= 0; --i, v >>= 8) s[i] = static_cast<char>(v & 0xff);
  return s;
}

// A publisher written against raw ZeroMQ, so a test decides which frames,
// seqs and replay answers the subscriber sees.
class FakePublisher {
 public:
  FakePublisher() {
    pub_.bind("tcp://127.0.0.1:*");
    router_.bind("tcp://127.0.0.1:*");
    router_.set(zmq::sockopt::rcvtimeo, 5000);
  }
  std::string endpoint() { return pub_.get(zmq::sockopt::last_endpoint); }
  std::string replay_endpoint() { return router_.get(zmq::sockopt::last_endpoint); }
  void SendFrames(const std::vector<std::string>& frames) {
    std::vector<zmq::const_buffer> b;
    for (const std::string& f : frames) b.push_back(zmq::buffer(f));
    (void)zmq::send_multipart(pub_, b);
  }
  void Send(uint64_t seq, const EventBatch& batch) { SendFrames({"", Be64(seq), EncodeBatch(batch)}); }
  // Waits for one replay request and answers it from `buffered`; returns the start seq asked for.
  uint64_t AnswerReplay(const std::map<uint64_t, EventBatch>& buffered) {
    std::vector<zmq::message_t> req;
    if (!zmq::recv_multipart(router_, std::back_inserter(req)) || req.size() != 3) return ~uint64_t{0};
    uint64_t start = 0;
    for (uint8_t c : req[2].to_string()) start = start << 8 | c;
    for (const auto& [seq, b] : buffered) {
      if (seq >= start) Reply(req[0].to_string(), Be64(seq), EncodeBatch(b));
    }
    Reply(req[0].to_string(), Be64(~uint64_t{0}), "");
    return start;
  }

 private:
  void Reply(const std::string& id, const std::string& seq, const std::string& payload) {
    std::vector<zmq::const_buffer> b{zmq::buffer(id), zmq::const_buffer(), zmq::buffer(seq), zmq::buffer(payload)};
    (void)zmq::send_multipart(router_, b);
  }
  zmq::context_t ctx_;
  zmq::socket_t pub_{ctx_, zmq::socket_type::pub};
  zmq::socket_t router_{ctx_, zmq::socket_type::router};
};

std::unique_ptr<Subscriber> Subscribe(const std::string& endpoint, const std::string& replay, Recorder& rec,
                                      std::chrono::milliseconds replay_timeout = std::chrono::seconds(5)) {
  SubscriberOptions o;
  o.endpoint = endpoint;
  o.replay_endpoint = replay;
  o.replay_timeout = replay_timeout;
  auto s = Subscriber::Create(o, [&rec](uint64_t seq, EventBatch&& b) { rec.Add(seq, std::move(b)); });
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

std::vector<uint64_t> Seqs(const std::vector<std::pair<uint64_t, EventBatch>>& got) {
  std::vector<uint64_t> s;
  for (const auto& [seq, b] : got) s.push_back(seq);
  return s;
}

// Sends `next` until the subscriber has delivered `n` batches (a SUB joins
// a moment after it connects; what it misses meanwhile comes by replay).
void PublishUntil(Publisher& pub, Recorder& rec, size_t n, int& next, double tag_base) {
  while (!rec.WaitForCount(n, std::chrono::milliseconds(20)) && next < 5000) {
    pub.Publish(TaggedBatch(tag_base + next));
    ++next;
  }
}

PublisherOptions Loopback() {
  PublisherOptions o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.replay_endpoint = "tcp://127.0.0.1:*";
  return o;
}

TEST(SubscriberTest, RefusesBadEndpoint) {
  SubscriberOptions o;
  o.endpoint = "bogus";
  EXPECT_FALSE(Subscriber::Create(o, [](uint64_t, EventBatch&&) {}).ok());
  o.endpoint = "tcp://127.0.0.1:1";
  o.replay_endpoint = "tcp://:x";
  EXPECT_FALSE(Subscriber::Create(o, [](uint64_t, EventBatch&&) {}).ok());
}

TEST(SubscriberTest, DeliversInOrderExactlyOnce) {
  auto pub = Publisher::Create(Loopback());
  ASSERT_TRUE(pub.ok());
  Recorder rec;
  auto sub = Subscribe((*pub)->endpoint(), (*pub)->replay_endpoint(), rec);
  sub->Start();
  int next = 0;
  PublishUntil(**pub, rec, 1, next, 0);
  for (int i = 0; i < 200; ++i, ++next) (*pub)->Publish(TaggedBatch(next));
  ASSERT_TRUE(rec.WaitForCount(static_cast<size_t>(next)));
  const auto got = rec.got();
  ASSERT_EQ(got.size(), static_cast<size_t>(next));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, i);
    EXPECT_EQ(got[i].second.ts, static_cast<double>(i));  // the batch published i-th
  }
  EXPECT_EQ(sub->stats().resets, 0);
}

TEST(SubscriberTest, LateJoinerRebuildsFromReplay) {
  auto pub = Publisher::Create(Loopback());
  ASSERT_TRUE(pub.ok());
  for (int i = 0; i < 30; ++i) (*pub)->Publish(TaggedBatch(i));
  while ((*pub)->stats().published < 30) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  Recorder rec;
  auto sub = Subscribe((*pub)->endpoint(), (*pub)->replay_endpoint(), rec);
  sub->Start();
  ASSERT_TRUE(rec.WaitForCount(30));
  int next = 30;
  PublishUntil(**pub, rec, 31, next, 0);
  ASSERT_TRUE(rec.WaitForCount(static_cast<size_t>(next)));
  const auto got = rec.got();
  std::vector<uint64_t> want;
  for (int i = 0; i < next; ++i) want.push_back(i);
  EXPECT_EQ(Seqs(got), want);
  EXPECT_GE(sub->stats().replays, 1);
}

TEST(SubscriberTest, FillsGapFromReplay) {
  FakePublisher fake;
  Recorder rec;
  auto sub = Subscribe(fake.endpoint(), fake.replay_endpoint(), rec);
  sub->Start();
  std::map<uint64_t, EventBatch> all;
  for (uint64_t s = 0; s < 6; ++s) all[s] = TaggedBatch(static_cast<double>(s));
  EXPECT_EQ(fake.AnswerReplay({}), 0u);  // the late-join request, nothing buffered yet
  // Live 0 until the SUB has joined.
  while (!rec.WaitForCount(1, std::chrono::milliseconds(20))) fake.Send(0, all[0]);
  fake.Send(1, all[1]);
  fake.Send(4, all[4]);                   // 2 and 3 never arrive live
  EXPECT_EQ(fake.AnswerReplay(all), 2u);  // asked from last + 1
  fake.Send(5, all[5]);
  ASSERT_TRUE(rec.WaitForCount(6));
  const auto got = rec.got();
  EXPECT_EQ(Seqs(got), (std::vector<uint64_t>{0, 1, 2, 3, 4, 5}));
  for (const auto& [seq, b] : got) EXPECT_EQ(b, all[seq]);
  EXPECT_EQ(sub->stats().gaps, 1);
  EXPECT_EQ(sub->stats().resets, 0);
}

TEST(SubscriberTest, ResetsWhenGapCannotBeFilled) {
  FakePublisher fake;
  Recorder rec;
  auto sub = Subscribe(fake.endpoint(), fake.replay_endpoint(), rec);
  sub->Start();
  fake.AnswerReplay({});
  while (!rec.WaitForCount(1, std::chrono::milliseconds(20))) fake.Send(0, TaggedBatch(0));
  fake.Send(7, TaggedBatch(7));
  fake.AnswerReplay({{7, TaggedBatch(7)}});  // 1..6 are gone (dropped by the publisher)
  ASSERT_TRUE(rec.WaitForCount(3));
  const auto got = rec.got();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(IsReset(got[1].second));  // the view restarts empty before 7
  EXPECT_EQ(got[2].first, 7u);
  EXPECT_EQ(got[2].second, TaggedBatch(7));
  EXPECT_EQ(sub->stats().resets, 1);
}

TEST(SubscriberTest, ResetsOnGapWithoutReplaySocket) {
  FakePublisher fake;
  Recorder rec;
  auto sub = Subscribe(fake.endpoint(), "", rec);
  sub->Start();
  while (!rec.WaitForCount(1, std::chrono::milliseconds(20))) fake.Send(0, TaggedBatch(0));
  fake.Send(3, TaggedBatch(3));
  ASSERT_TRUE(rec.WaitForCount(3));
  const auto got = rec.got();
  EXPECT_TRUE(IsReset(got[1].second));
  EXPECT_EQ(got[2].first, 3u);
}

TEST(SubscriberTest, DropsAndCountsMalformedMessages) {
  FakePublisher fake;
  Recorder rec;
  auto sub = Subscribe(fake.endpoint(), "", rec);
  sub->Start();
  while (!rec.WaitForCount(1, std::chrono::milliseconds(20))) fake.Send(0, TaggedBatch(0));
  fake.SendFrames({"", "1234567", EncodeBatch(TaggedBatch(1))});  // seq of 7 bytes
  fake.SendFrames({"", Be64(1)});                                  // no payload
  fake.SendFrames({"", Be64(1), "\xc1 not msgpack"});              // seq 1, garbage payload
  fake.Send(2, TaggedBatch(2));
  ASSERT_TRUE(rec.WaitForCount(2));
  const auto got = rec.got();
  EXPECT_EQ(Seqs(got), (std::vector<uint64_t>{0, 2}));  // seq 1 was consumed, not a gap
  EXPECT_EQ(sub->stats().malformed, 3);
  EXPECT_EQ(sub->stats().resets, 0);
}

TEST(SubscriberTest, SurvivesPublisherRestart) {
  PublisherOptions o = Loopback();
  auto first = Publisher::Create(o);
  ASSERT_TRUE(first.ok());
  o.endpoint = (*first)->endpoint();  // the restarted one binds the same ports
  o.replay_endpoint = (*first)->replay_endpoint();
  Recorder rec;
  auto sub = Subscribe(o.endpoint, o.replay_endpoint, rec);
  sub->Start();
  int next = 0;
  PublishUntil(**first, rec, 1, next, 1000);
  for (int i = 0; i < 60; ++i, ++next) (*first)->Publish(TaggedBatch(1000 + next));
  ASSERT_TRUE(rec.WaitForCount(static_cast<size_t>(next)));
  const size_t n_first = static_cast<size_t>(next);
  first->reset();

  auto second = Publisher::Create(o);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  int next2 = 0;
  auto has_new = [&](const auto& g) { return g.size() > n_first + 3; };
  while (!rec.WaitFor(has_new, std::chrono::milliseconds(20)) && next2 < 2000) {
    (*second)->Publish(TaggedBatch(2000 + next2));
    ++next2;
  }
  const auto got = rec.got();
  ASSERT_GT(got.size(), n_first + 3);
  EXPECT_TRUE(IsReset(got[n_first].second));
  // After the reset: the new stream from its seq 0, in order, none missing.
  for (size_t i = n_first + 1; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, i - n_first - 1);
    EXPECT_EQ(got[i].second.ts, 2000.0 + static_cast<double>(i - n_first - 1));
  }
  EXPECT_EQ(sub->stats().resets, 1);
}

}  // namespace
}  // namespace pagoda::kvevents
