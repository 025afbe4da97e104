// RedisClient against a real redis-server of the test's own
// (support/redis_instance.h): URLs, replies, binary values, the pool, the
// server going away and coming back, timeouts. Tests that need the server
// skip when redis-server is not installed.
#include "redis/redis_client.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/redis_instance.h"

namespace pagoda::redis {
namespace {

using Type = RedisReply::Type;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::unique_ptr<RedisClient> Connect(const std::string& url, RedisClientOptions o = {}) {
  auto c = RedisClient::Create(url, o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(c).value() : nullptr;
}

// A TCP listener that accepts connections (the kernel's backlog does) and
// never answers: a server that hangs.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 16);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~SilentServer() { ::close(fd_); }
  std::string Uri() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(RedisUrlTest, ParsesHostPortDbAndCredentials) {
  auto a = ParseRedisUrl("redis://cache.internal:6380/3");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->host, "cache.internal");
  EXPECT_EQ(a->port, 6380);
  EXPECT_EQ(a->db, 3);
  EXPECT_EQ(a->user, "");
  EXPECT_EQ(a->password, "");

  a = ParseRedisUrl("redis://:s3cret@10.0.0.5");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "10.0.0.5");
  EXPECT_EQ(a->port, 6379);
  EXPECT_EQ(a->db, 0);
  EXPECT_EQ(a->user, "");
  EXPECT_EQ(a->password, "s3cret");

  a = ParseRedisUrl("redis://pagoda:p@ss:word@h:1/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->user, "pagoda");
  EXPECT_EQ(a->password, "p@ss:word");
  EXPECT_EQ(a->host, "h");
  EXPECT_EQ(a->port, 1);
  EXPECT_EQ(a->db, 0);

  a = ParseRedisUrl("redis://[::1]:6390/2");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 6390);
  EXPECT_EQ(a->db, 2);

  a = ParseRedisUrl("redis://");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 6379);
}

TEST(RedisUrlTest, RejectsBadUrlsWithoutShowingThePassword) {
  for (const char* url : {"http://host", "host:6379", "redis://host:notaport", "redis://host:", "redis://host:0",
                          "redis://host:65536", "redis://host:-1", "redis://host:6379/x", "redis://host:6379/-1",
                          "redis://host/1/2", "redis://::1:6379", "redis://[::1", "redis://[::1]x",
                          "redis://[]:1"}) {
    auto a = ParseRedisUrl(url);
    ASSERT_FALSE(a.ok()) << url;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << url;
  }
  auto a = ParseRedisUrl("redis://:hunter2@host:port");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message().find("hunter2"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("redis://@host:port"), std::string::npos) << a.status().message();
  EXPECT_EQ(RedisClient::Create("redis://host:notaport").status().code(), StatusCode::kInvalidArgument);
}

TEST(RedisUrlTest, RedactsThePasswordOnly) {
  EXPECT_EQ(RedactRedisUrl("redis://:pw@h:1/0"), "redis://@h:1/0");
  EXPECT_EQ(RedactRedisUrl("redis://user:pw@h"), "redis://user@h");
  EXPECT_EQ(RedactRedisUrl("redis://pw@h"), "redis://@h");  // a lone credential is the password
  EXPECT_EQ(RedactRedisUrl("redis://:p@ss@h"), "redis://@h");
  EXPECT_EQ(RedactRedisUrl("redis://h:6379/0"), "redis://h:6379/0");
}

TEST(RedisClientTest, CreateRefusesBadOptions) {
  RedisClientOptions o;
  o.pool_size = 0;
  EXPECT_EQ(RedisClient::Create("redis://h", o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.io_timeout_ms = 0;
  EXPECT_EQ(RedisClient::Create("redis://h", o).status().code(), StatusCode::kInvalidArgument);
  o = {};
  o.retry_after_ms = -1;
  EXPECT_EQ(RedisClient::Create("redis://h", o).status().code(), StatusCode::kInvalidArgument);
}

TEST(RedisClientTest, RunsCommandsAndReturnsEachReplyType) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  auto c = Connect(server.Uri());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Ping().ok());

  auto r = c->Command({"SET", "k", "v"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, Type::kStatus);
  EXPECT_EQ(r->bytes, "OK");

  r = c->Command({"GET", "k"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, Type::kBytes);
  EXPECT_EQ(r->bytes, "v");

  r = c->Command({"GET", "missing"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->is_nil());

  r = c->Command({"INCRBY", "n", "41"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, Type::kInteger);
  EXPECT_EQ(r->integer, 41);

  ASSERT_TRUE(c->Command({"RPUSH", "list", "a", "", "c"}).ok());
  r = c->Command({"MGET", "k", "missing"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->type, Type::kArray);
  ASSERT_EQ(r->elements.size(), 2u);
  EXPECT_EQ(r->elements[0].bytes, "v");
  EXPECT_TRUE(r->elements[1].is_nil());
  r = c->Command({"LRANGE", "list", "0", "-1"});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->elements.size(), 3u);
  EXPECT_EQ(r->elements[1].type, Type::kBytes);
  EXPECT_EQ(r->elements[1].bytes, "");

  // An error reply is a value for Command, an IoError naming the command for CommandOk.
  r = c->Command({"INCR", "k"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->is_error());
  EXPECT_NE(r->bytes.find("not an integer"), std::string::npos) << r->bytes;
  r = c->CommandOk({"INCR", "k"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("INCR"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(server.Uri()), std::string::npos) << r.status().message();
  // The connection is still usable after an error reply.
  EXPECT_EQ(c->Command({"GET", "k"})->bytes, "v");
}

TEST(RedisClientTest, ValuesAndKeysAreBinarySafe) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  auto c = Connect(server.Uri());
  ASSERT_TRUE(c);
  std::string value;
  for (int i = 0; i < 256; ++i) value.push_back(static_cast<char>(i));
  value += std::string("\r\n$3\r\n\0\0", 9);
  std::string big(3 << 20, '\0');  // 3 MiB, several socket buffers
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 9));
  const std::string key("k\0\r\n\xff", 5);
  const std::string_view set_small[] = {"SET", key, value};
  ASSERT_TRUE(c->CommandOk(set_small).ok());
  const std::string_view set_big[] = {"SET", "big", big};
  ASSERT_TRUE(c->CommandOk(set_big).ok());

  auto r = c->Command({"GET", key});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, value);
  r = c->Command({"GET", "big"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes.size(), big.size());
  EXPECT_TRUE(r->bytes == big);
  EXPECT_EQ(c->Command({"STRLEN", key})->integer, static_cast<int64_t>(value.size()));
  EXPECT_EQ(c->Command({"EXISTS", std::string("k\0\r\n", 4)})->integer, 0);  // a prefix is another key
}

TEST(RedisClientTest, SelectsTheDatabaseInTheUrl) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  auto db0 = Connect(server.Uri());
  auto db5 = Connect(server.Uri() + "/5");
  ASSERT_TRUE(db0 && db5);
  ASSERT_TRUE(db5->CommandOk({"SET", "where", "five"}).ok());
  EXPECT_TRUE(db0->Command({"GET", "where"})->is_nil());
  EXPECT_EQ(db5->Command({"GET", "where"})->bytes, "five");
}

TEST(RedisClientTest, AuthenticatesAndHidesAWrongPassword) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  {
    auto admin = Connect(server.Uri());
    ASSERT_TRUE(admin);
    ASSERT_TRUE(admin->CommandOk({"CONFIG", "SET", "requirepass", "right-one"}).ok());
  }
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  auto none = Connect(server.Uri());
  ASSERT_TRUE(none);
  auto r = none->CommandOk({"GET", "x"});
  ASSERT_FALSE(r.ok());  // NOAUTH
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);

  auto good = Connect("redis://:right-one@" + host);
  ASSERT_TRUE(good);
  EXPECT_TRUE(good->Ping().ok());
  auto user = Connect("redis://default:right-one@" + host + "/1");
  ASSERT_TRUE(user);
  EXPECT_TRUE(user->Ping().ok());

  auto bad = Connect("redis://:wrong-one@" + host);
  ASSERT_TRUE(bad);
  const Status st = bad->Ping();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("AUTH failed"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("wrong-one"), std::string::npos) << st.message();
  EXPECT_EQ(bad->url(), "redis://@" + host);
}

TEST(RedisClientTest, ReconnectsAfterTheServerRestarts) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  RedisClientOptions o;
  o.pool_size = 3;
  auto c = Connect(server.Uri(), o);
  ASSERT_TRUE(c);
  // Fill the pool with idle connections that the restart will leave dead.
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&] { EXPECT_TRUE(c->Ping().ok()); });
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(server.Restart());
  auto r = c->CommandOk({"SET", "after", "restart"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(c->Ping().ok()) << i;
  EXPECT_EQ(c->Command({"GET", "after"})->bytes, "restart");
}

TEST(RedisClientTest, ServerDownIsAClearIoErrorAndRecovers) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  RedisClientOptions o;
  o.name = "test store";
  o.connect_timeout_ms = o.io_timeout_ms = 300;
  auto c = Connect(server.Uri(), o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Ping().ok());
  server.Kill();
  for (int i = 0; i < 3; ++i) {
    const Clock::time_point t0 = Clock::now();
    auto r = c->Command({"GET", "k"});
    ASSERT_FALSE(r.ok());
    EXPECT_LT(SecondsSince(t0), 1.0);
    EXPECT_EQ(r.status().code(), StatusCode::kIoError);
    EXPECT_NE(r.status().message().find("test store " + server.Uri()), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("connect"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(c->backing_off());  // retry_after_ms = 0: every call tries
  ASSERT_TRUE(server.Restart());
  EXPECT_TRUE(c->Ping().ok());
}

TEST(RedisClientTest, BacksOffAfterAFailureWhenAsked) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  RedisClientOptions o;
  o.retry_after_ms = 500;
  auto c = Connect(server.Uri(), o);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Ping().ok());
  EXPECT_FALSE(c->backing_off());
  server.Kill();
  EXPECT_FALSE(c->Ping().ok());
  EXPECT_TRUE(c->backing_off());
  const Status st = c->Ping();  // inside the pause: refused without trying
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("retrying"), std::string::npos) << st.message();
  ASSERT_TRUE(server.Restart());
  const Clock::time_point t0 = Clock::now();
  while (c->backing_off() && SecondsSince(t0) < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(c->backing_off());
  EXPECT_TRUE(c->Ping().ok());
}

TEST(RedisClientTest, UnreachableServerFailsFast) {
  RedisClientOptions o;
  o.connect_timeout_ms = o.io_timeout_ms = 300;
  auto c = Connect("redis://127.0.0.1:1/0", o);
  ASSERT_TRUE(c);
  const Status st = c->Ping();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("connect"), std::string::npos) << st.message();
}

TEST(RedisClientTest, ServerThatNeverAnswersTimesOut) {
  SilentServer silent;
  RedisClientOptions o;
  o.connect_timeout_ms = o.io_timeout_ms = 200;
  auto c = Connect(silent.Uri(), o);
  ASSERT_TRUE(c);
  const Clock::time_point t0 = Clock::now();
  auto r = c->Command({"GET", "k"});
  const double took = SecondsSince(t0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("timed out"), std::string::npos) << r.status().message();
  EXPECT_GE(took, 0.15);
  EXPECT_LT(took, 0.39);  // once: a timeout is not retried
}

TEST(RedisClientTest, WritingToADeadServerIsAnErrorNotASignal) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  auto c = Connect(server.Uri());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Ping().ok());  // a pooled connection, about to go dead
  server.Kill();
  // Writing megabytes into a reset connection raises SIGPIPE, which would
  // end this process if the client let it through.
  const std::string big(16 << 20, 'x');
  const std::string_view argv[] = {"SET", "big", big};
  for (int i = 0; i < 3; ++i) {
    auto r = c->Command(argv);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  }
}

TEST(RedisClientTest, PoolServesConcurrentCallers) {
  testing::RedisServer server;
  if (!server.ok()) GTEST_SKIP() << server.why();
  RedisClientOptions o;
  o.pool_size = 2;
  auto c = Connect(server.Uri(), o);
  ASSERT_TRUE(c);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (!c->CommandOk({"INCR", "counter"}).ok()) ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(c->Command({"GET", "counter"})->bytes, "300");
  const std::string clients = c->Command({"CLIENT", "LIST"})->bytes;
  EXPECT_LE(std::count(clients.begin(), clients.end(), '\n'), 2) << clients;  // the pool's, not one per call
}

}  // namespace
}  // namespace pagoda::redis
