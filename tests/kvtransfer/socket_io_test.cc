#include "kvtransfer/socket_io.h"

#include <sys/socket.h>

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pagoda::kvtransfer {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST(SocketIoTest, ParsesHostAndPort) {
  auto a = ParseHostPort("127.0.0.1:9100");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9100);
  auto b = ParseHostPort("[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 0);
  auto c = ParseHostPort("decode-0.svc:65535");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "decode-0.svc");
  EXPECT_EQ(c->port, 65535);
  for (const char* bad : {"", "host", ":80", "host:", "host:65536", "host:8x", "host:-1", "[::1]", "[::1]80", "[::1"}) {
    EXPECT_EQ(ParseHostPort(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(SocketIoTest, WritesAndReadsOverLoopback) {
  auto l = ListenTcp(HostPort{"127.0.0.1", 0});
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const uint16_t port = LocalPort(*l);
  ASSERT_NE(port, 0);
  auto c = ConnectTcp(HostPort{"127.0.0.1", port}, milliseconds(1000));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Socket server(::accept(l->fd(), nullptr, nullptr));
  ASSERT_TRUE(server.valid());
  std::vector<uint8_t> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31);
  std::thread writer([&] {
    EXPECT_TRUE(WriteAll(*c, data.data(), data.size(), Clock::now() + milliseconds(3000)).ok());
  });
  std::vector<uint8_t> got(data.size());
  SocketReader r(server, milliseconds(2000));
  EXPECT_TRUE(r.ReadExact(got.data(), got.size()).ok());
  writer.join();
  EXPECT_EQ(got, data);
  // The peer closes: a read is refused (truncated), not blocked.
  *c = Socket();
  uint8_t b;
  EXPECT_EQ(r.ReadExact(&b, 1).code(), StatusCode::kInvalidArgument);
}

TEST(SocketIoTest, ReadFromASilentPeerTimesOut) {
  auto l = ListenTcp(HostPort{"127.0.0.1", 0});
  ASSERT_TRUE(l.ok());
  auto c = ConnectTcp(HostPort{"127.0.0.1", LocalPort(*l)}, milliseconds(1000));
  ASSERT_TRUE(c.ok());
  uint8_t b;
  const auto start = Clock::now();
  SocketReader idle(*c, milliseconds(100));
  EXPECT_EQ(idle.ReadExact(&b, 1).code(), StatusCode::kDeadlineExceeded);
  // The overall deadline bounds it too, whatever the idle limit.
  SocketReader bounded(*c, milliseconds(10'000), Clock::now() + milliseconds(100));
  EXPECT_EQ(bounded.ReadExact(&b, 1).code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.5);
}

TEST(SocketIoTest, ShutdownWakesABlockedReader) {
  auto l = ListenTcp(HostPort{"127.0.0.1", 0});
  ASSERT_TRUE(l.ok());
  auto c = ConnectTcp(HostPort{"127.0.0.1", LocalPort(*l)}, milliseconds(1000));
  ASSERT_TRUE(c.ok());
  Status st;
  const auto start = Clock::now();
  std::thread reader([&] {
    SocketReader r(*c, milliseconds(10'000));
    uint8_t b;
    st = r.ReadExact(&b, 1);
  });
  std::this_thread::sleep_for(milliseconds(50));
  c->Shutdown();
  reader.join();
  EXPECT_FALSE(st.ok());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
}

TEST(SocketIoTest, ConnectingToAClosedPortFails) {
  uint16_t port;
  {
    auto l = ListenTcp(HostPort{"127.0.0.1", 0});
    ASSERT_TRUE(l.ok());
    port = LocalPort(*l);
  }
  auto c = ConnectTcp(HostPort{"127.0.0.1", port}, milliseconds(500));
  EXPECT_EQ(c.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace pagoda::kvtransfer
