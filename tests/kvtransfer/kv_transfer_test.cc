// KvTransferSender -> KvTransferReceiver over real loopback sockets.
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kv/block_convert.h"
#include "kvtransfer/kv_transfer_receiver.h"
#include "kvtransfer/kv_transfer_sender.h"
#include "kvtransfer/socket_io.h"
#include "kvtransfer/transfer_test_streams.h"

namespace pagoda::kvtransfer {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::ChainBlock;
using testing::kTestModel;
using testing::MakeChain;
using testing::TestLayout;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Waits up to `limit` for `pred`.
template <class Pred>
bool Eventually(Pred pred, milliseconds limit = milliseconds(3000)) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return pred();
}

class KvTransferTest : public ::testing::Test {
 protected:
  void SetUp() override { StartReceiver(milliseconds(2000)); }
  void TearDown() override {
    if (receiver_) receiver_->Stop();
  }

  void StartReceiver(milliseconds idle_timeout, int max_connections = 16) {
    if (receiver_) receiver_->Stop();
    receiver_.reset();
    inbox_.reset();
    tier_.reset();
    kv::MemoryTierOptions o;
    o.layout = TestLayout();
    o.max_bytes = 256 * o.layout.RecordBytes();
    auto t = kv::MemoryTier::Open(o);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tier_ = std::move(t).value();
    inbox_ = std::make_unique<TransferInbox>(*tier_, std::vector<uint64_t>{kTestModel});
    KvTransferReceiverOptions ro;
    ro.listen = HostPort{"127.0.0.1", 0};
    ro.idle_timeout = idle_timeout;
    ro.max_connections = max_connections;
    auto r = KvTransferReceiver::Start(ro, *inbox_);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    receiver_ = std::move(r).value();
    ASSERT_NE(receiver_->port(), 0);
  }

  KvTransferSenderOptions SenderOptions(uint16_t port, milliseconds timeout = milliseconds(2000)) const {
    KvTransferSenderOptions o;
    o.to = HostPort{"127.0.0.1", port};
    o.transfer_id = "req-1";
    o.layout = TestLayout();
    o.timeout = timeout;
    return o;
  }
  std::shared_ptr<KvTransferSender> StartSender(const KvTransferSenderOptions& o) {
    auto s = KvTransferSender::Start(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  static void Send(KvTransferSender& s, const std::vector<ChainBlock>& chain) {
    for (const ChainBlock& b : chain) s.OnBlock(b.hash, b.parent, b.tokens, b.payload.data());
  }
  void ExpectHeld(const std::vector<ChainBlock>& chain) {
    for (const ChainBlock& b : chain) {
      std::vector<uint8_t> out(static_cast<size_t>(tier_->layout().block_bytes));
      auto r = tier_->Get(b.hash, out.data());
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(out, b.payload);
      EXPECT_EQ(r->parent, b.parent);
      EXPECT_EQ(r->tokens, b.tokens);
    }
  }
  // A port nothing listens on (bound, then closed).
  static uint16_t DeadPort() {
    auto l = ListenTcp(HostPort{"127.0.0.1", 0});
    EXPECT_TRUE(l.ok());
    return l.ok() ? LocalPort(*l) : 1;
  }

  std::unique_ptr<kv::MemoryTier> tier_;
  std::unique_ptr<TransferInbox> inbox_;
  std::unique_ptr<KvTransferReceiver> receiver_;
};

TEST_F(KvTransferTest, FinishedTransferLeavesEveryBlockInTheTier) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 6, 1, "salt");
  auto sender = StartSender(SenderOptions(receiver_->port()));
  ASSERT_TRUE(sender);
  Send(*sender, chain);
  const KvTransferResult r = sender->Finish();
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.blocks, 6);
  EXPECT_EQ(r.kept, 6);
  EXPECT_EQ(r.bytes, 6 * l.RecordBytes());
  EXPECT_GT(r.seconds, 0.0);
  ExpectHeld(chain);
  EXPECT_TRUE(Eventually([&] { return inbox_->stats().transfers == 1; }));
  EXPECT_EQ(inbox_->stats().blocks, 6);
}

TEST_F(KvTransferTest, BlocksSentWhileTheSenderConnectsAreNotLost) {
  // OnBlock right after Start (the thread may not have connected yet), and
  // more after a pause (streamed while the "prefill" goes on).
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 8, 2);
  auto sender = StartSender(SenderOptions(receiver_->port()));
  ASSERT_TRUE(sender);
  Send(*sender, {chain.begin(), chain.begin() + 4});
  std::this_thread::sleep_for(milliseconds(30));
  Send(*sender, {chain.begin() + 4, chain.end()});
  const KvTransferResult r = sender->Finish();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.kept, 8);
  ExpectHeld(chain);
}

TEST_F(KvTransferTest, EmptyTransferIsAcknowledged) {
  auto sender = StartSender(SenderOptions(receiver_->port()));
  ASSERT_TRUE(sender);
  const KvTransferResult r = sender->Finish();
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.blocks, 0);
  EXPECT_EQ(r.kept, 0);
}

TEST_F(KvTransferTest, ConcurrentTransfersAllArrive) {
  const kv::BlockLayout l = TestLayout();
  std::vector<std::vector<ChainBlock>> chains;
  std::vector<std::shared_ptr<KvTransferSender>> senders;
  for (int i = 0; i < 4; ++i) {
    chains.push_back(MakeChain(l, 5, 100 + i, "t" + std::to_string(i)));
    KvTransferSenderOptions o = SenderOptions(receiver_->port());
    o.transfer_id = "req-" + std::to_string(i);
    senders.push_back(StartSender(o));
    ASSERT_TRUE(senders.back());
  }
  for (int i = 0; i < 4; ++i) Send(*senders[i], chains[i]);
  for (int i = 0; i < 4; ++i) {
    const KvTransferResult r = senders[i]->Finish();
    EXPECT_TRUE(r.status.ok()) << i << ": " << r.status.ToString();
    EXPECT_EQ(r.kept, 5) << i;
    ExpectHeld(chains[i]);
  }
}

TEST_F(KvTransferTest, FinishAsyncCallsBackOnceWithTheResult) {
  const kv::BlockLayout l = TestLayout();
  const std::vector<ChainBlock> chain = MakeChain(l, 3, 3);
  auto sender = StartSender(SenderOptions(receiver_->port()));
  ASSERT_TRUE(sender);
  Send(*sender, chain);
  std::atomic<int> calls{0};
  std::promise<KvTransferResult> done;
  sender->FinishAsync([&](const KvTransferResult& r) {
    if (calls.fetch_add(1) == 0) done.set_value(r);
  });
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(3)), std::future_status::ready);
  const KvTransferResult r = f.get();
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.blocks, 3);
  EXPECT_EQ(r.kept, 3);
  ExpectHeld(chain);
  sender.reset();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(KvTransferTest, FinishAsyncAfterAFailureCallsBackOnce) {
  auto sender = StartSender(SenderOptions(DeadPort(), milliseconds(500)));
  ASSERT_TRUE(sender);
  std::this_thread::sleep_for(milliseconds(100));  // the connection is refused meanwhile
  std::atomic<int> calls{0};
  std::promise<KvTransferResult> done;
  sender->FinishAsync([&](const KvTransferResult& r) {
    if (calls.fetch_add(1) == 0) done.set_value(r);
  });
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(3)), std::future_status::ready);
  EXPECT_FALSE(f.get().status.ok());
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(KvTransferTest, NobodyListeningFailsWithinTheTimeout) {
  const auto start = Clock::now();
  auto sender = StartSender(SenderOptions(DeadPort(), milliseconds(500)));
  ASSERT_TRUE(sender);
  Send(*sender, MakeChain(TestLayout(), 2));
  const KvTransferResult r = sender->Finish();
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.kept, 0);
  EXPECT_LT(SecondsSince(start), 2.0);
}

// A receiver that accepts nothing and reads nothing (the kernel completes the
// handshake from the backlog): the sender's wait for the acknowledgement
// times out.
TEST_F(KvTransferTest, ReceiverThatNeverAcknowledgesTimesOut) {
  auto listener = ListenTcp(HostPort{"127.0.0.1", 0});
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  const auto start = Clock::now();
  auto sender = StartSender(SenderOptions(LocalPort(*listener), milliseconds(300)));
  ASSERT_TRUE(sender);
  Send(*sender, MakeChain(TestLayout(), 3));
  const KvTransferResult r = sender->Finish();
  EXPECT_EQ(r.status.code(), StatusCode::kDeadlineExceeded) << r.status.ToString();
  EXPECT_GE(SecondsSince(start), 0.25);
  EXPECT_LT(SecondsSince(start), 2.0);
}

// The same with blocks big enough to fill both socket buffers: a write
// stalls and times out.
TEST_F(KvTransferTest, ReceiverThatStopsReadingStallsTheSenderUntilTheTimeout) {
  auto listener = ListenTcp(HostPort{"127.0.0.1", 0});
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  // Accepted, then never read: 64 blocks of 512 KiB.
  Socket accepted;
  std::thread acceptor([&] {
    const int fd = ::accept4(listener->fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) accepted = Socket(fd);
  });
  kv::BlockLayout big;
  big.model_fingerprint = kTestModel;
  big.layers = {{4096, 4096, 8}};
  big.type = kernels::KvType::kF32;
  big.block_size = 16;
  big = kv::LayoutWithType(big, kernels::KvType::kF32, kTestModel);
  ASSERT_GT(big.block_bytes, 0);
  KvTransferSenderOptions o = SenderOptions(LocalPort(*listener), milliseconds(300));
  o.layout = big;
  const auto start = Clock::now();
  auto sender = StartSender(o);
  ASSERT_TRUE(sender);
  kv::BlockHasher hasher(big.block_size);
  kv::BlockHash parent = hasher.Root("");
  std::vector<int32_t> tokens(big.block_size, 7);
  std::vector<uint8_t> payload(static_cast<size_t>(big.block_bytes), 0x3c);
  for (int i = 0; i < 64; ++i) {
    const kv::BlockHash h = hasher.Next(parent, tokens);
    sender->OnBlock(h, parent, tokens, payload.data());
    parent = h;
  }
  const KvTransferResult r = sender->Finish();
  EXPECT_EQ(r.status.code(), StatusCode::kDeadlineExceeded) << r.status.ToString();
  EXPECT_LT(r.blocks, 64) << "every block went through: the buffers did not fill";
  EXPECT_LT(SecondsSince(start), 2.5);
  ::shutdown(listener->fd(), SHUT_RDWR);  // wakes the acceptor if nothing connected
  acceptor.join();
}

TEST_F(KvTransferTest, RefusedTransferIsAFailure) {
  KvTransferSenderOptions o = SenderOptions(receiver_->port());
  o.layout = TestLayout(kernels::KvType::kF16, kTestModel + 1);  // a model the receiver does not take
  auto sender = StartSender(o);
  ASSERT_TRUE(sender);
  const std::vector<ChainBlock> chain = MakeChain(o.layout, 1);
  Send(*sender, chain);
  const KvTransferResult r = sender->Finish();
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.kept, 0);
  EXPECT_FALSE(tier_->Contains(chain[0].hash));
  EXPECT_TRUE(Eventually([&] { return inbox_->stats().refused_transfers == 1; }));
}

// Refused at the first of many blocks: the receiver acknowledges and
// closes while the sender still writes, so a write fails (EPIPE / reset);
// the status must still carry the receiver's reason, not "Broken pipe".
// DISABLED: today's sender returns the write error without reading the
// acknowledgement that is waiting (see the fix proposed with these tests).
TEST_F(KvTransferTest, RefusalMidStreamReportsTheReceiversReason) {
  KvTransferSenderOptions o = SenderOptions(receiver_->port());
  o.layout = TestLayout(kernels::KvType::kF16, kTestModel + 1);  // a model the receiver does not take
  auto sender = StartSender(o);
  ASSERT_TRUE(sender);
  // Far more than the socket buffers hold (~8 MB).
  const testing::ChainBlock b = MakeChain(o.layout, 1)[0];
  for (int i = 0; i < 20000; ++i) sender->OnBlock(b.hash, b.parent, b.tokens, b.payload.data());
  const KvTransferResult r = sender->Finish();
  EXPECT_EQ(r.status.code(), StatusCode::kFailedPrecondition) << r.status.ToString();
  EXPECT_NE(r.status.message().find("fingerprint"), std::string::npos) << r.status.ToString();
  EXPECT_LT(r.blocks, 20000);
}

TEST_F(KvTransferTest, IdleClientIsDroppedAfterTheIdleTimeout) {
  StartReceiver(milliseconds(200));
  auto c = ConnectTcp(HostPort{"127.0.0.1", receiver_->port()}, milliseconds(1000));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const auto start = Clock::now();
  // Nothing sent: the receiver gives up and says so.
  SocketReader reader(*c, milliseconds(3000));
  auto ack = ReadAck(reader);
  const double waited = SecondsSince(start);
  ASSERT_TRUE(ack.ok()) << ack.status().ToString();
  EXPECT_FALSE(ack->ok);
  EXPECT_GE(waited, 0.15);
  EXPECT_LT(waited, 2.0);
  // Then it closes the connection.
  uint8_t byte;
  EXPECT_FALSE(reader.ReadExact(&byte, 1).ok());
  EXPECT_TRUE(Eventually([&] { return inbox_->stats().refused_transfers == 1; }));
  const auto stop = Clock::now();
  receiver_->Stop();
  EXPECT_LT(SecondsSince(stop), 1.0);
}

TEST_F(KvTransferTest, ClientThatStallsMidStreamIsDropped) {
  StartReceiver(milliseconds(200));
  auto c = ConnectTcp(HostPort{"127.0.0.1", receiver_->port()}, milliseconds(1000));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const kv::BlockLayout l = TestLayout();
  std::vector<uint8_t> s = testing::Stream(l, MakeChain(l, 2));
  s.resize(s.size() / 2);
  ASSERT_TRUE(WriteAll(*c, s.data(), s.size(), Clock::now() + milliseconds(1000)).ok());
  SocketReader reader(*c, milliseconds(3000));
  auto ack = ReadAck(reader);
  ASSERT_TRUE(ack.ok()) << ack.status().ToString();
  EXPECT_FALSE(ack->ok);
}

TEST_F(KvTransferTest, StopClosesOpenConnectionsPromptly) {
  // A long idle timeout: only Stop can end the connection.
  StartReceiver(milliseconds(30'000));
  auto c = ConnectTcp(HostPort{"127.0.0.1", receiver_->port()}, milliseconds(1000));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::vector<uint8_t> head;
  AppendStreamHeader("half", &head);
  ASSERT_TRUE(WriteAll(*c, head.data(), head.size(), Clock::now() + milliseconds(1000)).ok());
  std::this_thread::sleep_for(milliseconds(100));  // accepted and reading
  const auto stop = Clock::now();
  receiver_->Stop();
  EXPECT_LT(SecondsSince(stop), 1.0);
  receiver_->Stop();  // twice is fine
}

TEST_F(KvTransferTest, ConnectionsBeyondTheLimitAreClosed) {
  StartReceiver(milliseconds(3000), /*max_connections=*/1);
  auto first = ConnectTcp(HostPort{"127.0.0.1", receiver_->port()}, milliseconds(1000));
  ASSERT_TRUE(first.ok());
  std::this_thread::sleep_for(milliseconds(100));  // the first holds the one slot
  auto second = ConnectTcp(HostPort{"127.0.0.1", receiver_->port()}, milliseconds(1000));
  ASSERT_TRUE(second.ok());
  const auto start = Clock::now();
  SocketReader reader(*second, milliseconds(2000));
  auto ack = ReadAck(reader);
  EXPECT_FALSE(ack.ok()) << "closed without an acknowledgement";
  EXPECT_LT(SecondsSince(start), 1.0);
}

TEST_F(KvTransferTest, DestroyingASenderWithoutFinishDoesNotWait) {
  {
    auto sender = StartSender(SenderOptions(receiver_->port()));
    ASSERT_TRUE(sender);
    Send(*sender, MakeChain(TestLayout(), 2));
    const auto start = Clock::now();
    sender.reset();
    EXPECT_LT(SecondsSince(start), 0.5);
  }
  // The receiver sees the stream end without its end frame and refuses it.
  EXPECT_TRUE(Eventually([&] { return inbox_->stats().refused_transfers == 1; }));
  {
    // And towards a peer that never answers: still no wait.
    auto listener = ListenTcp(HostPort{"127.0.0.1", 0});
    ASSERT_TRUE(listener.ok());
    auto sender = StartSender(SenderOptions(LocalPort(*listener), milliseconds(300)));
    ASSERT_TRUE(sender);
    Send(*sender, MakeChain(TestLayout(), 2));
    const auto start = Clock::now();
    sender.reset();
    EXPECT_LT(SecondsSince(start), 0.5);
    std::this_thread::sleep_for(milliseconds(400));  // its thread ends on its own
  }
}

TEST_F(KvTransferTest, StartRefusesABadIdOrLayout) {
  KvTransferSenderOptions o = SenderOptions(receiver_->port());
  o.transfer_id = "";
  EXPECT_EQ(KvTransferSender::Start(o).status().code(), StatusCode::kInvalidArgument);
  o.transfer_id = "has space";
  EXPECT_EQ(KvTransferSender::Start(o).status().code(), StatusCode::kInvalidArgument);
  o = SenderOptions(receiver_->port());
  o.layout.block_bytes += 1;
  EXPECT_EQ(KvTransferSender::Start(o).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KvTransferTest, ReceiverRefusesAnAddressInUse) {
  KvTransferReceiverOptions ro;
  ro.listen = HostPort{"127.0.0.1", receiver_->port()};
  EXPECT_FALSE(KvTransferReceiver::Start(ro, *inbox_).ok());
}

}  // namespace
}  // namespace pagoda::kvtransfer
