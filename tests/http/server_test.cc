#include "http/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "http/auth.h"
#include "http/client.h"
#include "http/raw_socket.h"

namespace pagoda::http {
namespace {

using namespace std::chrono_literals;
using testing::RawSocket;

// Collects writers handed to a deferred handler so a test thread can answer them.
struct Parked {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<ResponseWriter>> writers;

  void Add(std::shared_ptr<ResponseWriter> w) {
    std::lock_guard<std::mutex> lock(mu);
    writers.push_back(std::move(w));
    cv.notify_all();
  }
  bool WaitFor(size_t n, std::chrono::milliseconds limit = 10s) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, limit, [&] { return writers.size() >= n; });
  }
};

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions options = {}) {
    Router router;
    router.Add("GET", "/health", SyncHandler([](const Request&) { return Response::Json(200, R"({"status":"ok"})"); }));
    router.Add("POST", "/echo", SyncHandler([](const Request& r) { return Response::Text(200, r.body); }));
    router.Add("GET", "/conn", SyncHandler([](const Request& r) {
                 return Response::Text(200, std::to_string(r.connection_id));
               }));
    router.Add("POST", "/park", Handler([this](const Request&, std::shared_ptr<ResponseWriter> w) {
                 parked_.Add(std::move(w));
               }));
    router.Add("GET", "/drop", Handler([](const Request&, std::shared_ptr<ResponseWriter>) {}));
    // A whole stream queued before the connection writes anything.
    router.Add("GET", "/burst", Handler([](const Request&, std::shared_ptr<ResponseWriter> w) {
                 w->SendSse("1");
                 w->SendSse("2");
                 w->SendSseEvents("event: e\ndata: 3\n\n: note\n\n");
                 w->EndSse();
               }));
    router.Add("GET", "/v1/secret", SyncHandler([](const Request&) { return Response::Json(200, "{}"); }));
    router.AddGuard("/v1/", [](const Request& r) { return RequireBearerToken(r, "sk-test"); });
    server_ = std::make_unique<Server>(options, std::move(router));
    ASSERT_TRUE(server_->Start().ok());
    port_ = server_->port();
    ASSERT_NE(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(2s);
  }

  Parked parked_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
};

TEST_F(ServerTest, KeepAliveReusesOneConnection) {
  StartServer();
  Client client("127.0.0.1", port_);
  std::string first_conn;
  for (int i = 0; i < 5; ++i) {
    auto r = client.Send("GET", "/conn");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->keep_alive);
    if (i == 0) first_conn = r->body;
    EXPECT_EQ(r->body, first_conn);
  }
  EXPECT_EQ(client.connects(), 1u);
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
  auto e = client.Send("POST", "/echo", "payload");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->body, "payload");
}

TEST_F(ServerTest, UnknownRouteAndMethodGiveOpenAiErrors) {
  StartServer();
  Client client("127.0.0.1", port_);
  auto r = client.Send("GET", "/nope");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
  EXPECT_NE(r->body.find("\"error\":{\"message\""), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("\"param\":null"), std::string::npos);
  r = client.Send("POST", "/health", "{}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(*r->headers.Find("allow"), "GET");
}

TEST_F(ServerTest, BearerGuardProtectsV1) {
  StartServer();
  Client client("127.0.0.1", port_);
  auto r = client.Send("GET", "/v1/secret");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(r->body.find("invalid_api_key"), std::string::npos);
  Headers h;
  h.Add("Authorization", "Bearer sk-wrong");
  EXPECT_EQ(client.Send("GET", "/v1/secret", "", h)->status, 401);
  Headers ok;
  ok.Add("Authorization", "Bearer sk-test");
  EXPECT_EQ(client.Send("GET", "/v1/secret", "", ok)->status, 200);
  EXPECT_EQ(client.Send("GET", "/health")->status, 200);  // outside /v1
}

TEST_F(ServerTest, SseEventsPushedFromAnotherThread) {
  StartServer();
  std::thread engine([&] {
    ASSERT_TRUE(parked_.WaitFor(1));
    auto w = parked_.writers[0];
    for (int i = 0; i < 20; ++i) {
      EXPECT_TRUE(w->SendSse("{\"i\":" + std::to_string(i) + "}"));
      if (i % 5 == 0) std::this_thread::sleep_for(5ms);
    }
    w->SendSse("[DONE]");
    w->EndSse();
  });
  Client client("127.0.0.1", port_);
  std::vector<std::string> events;
  auto r = client.SendSse("POST", "/park", "{}", [&](std::string_view d) {
    events.emplace_back(d);
    return true;
  });
  engine.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(*r->headers.Find("Content-Type"), "text/event-stream");
  ASSERT_EQ(events.size(), 21u);
  EXPECT_EQ(events[3], "{\"i\":3}");
  EXPECT_EQ(events.back(), "[DONE]");
  // The connection survives the stream.
  auto again = client.Send("GET", "/health");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(client.connects(), 1u);
}

TEST_F(ServerTest, MultiLineSseDataIsSplitIntoDataLines) {
  StartServer();
  RawSocket s(port_);
  ASSERT_TRUE(s.Send("POST /park HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_TRUE(parked_.WaitFor(1));
  parked_.writers[0]->SendSse("a\nb");
  parked_.writers[0]->EndSse();
  const std::string raw = s.ReadUntil("0\r\n\r\n");
  EXPECT_NE(raw.find("data: a\ndata: b\n\n"), std::string::npos) << raw;
}

TEST_F(ServerTest, EventsQueuedBeforeAWriteGoOutAsOneChunk) {
  StartServer();
  RawSocket s(port_);
  ASSERT_TRUE(s.Send("GET /burst HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string raw = s.ReadAll();
  const size_t body = raw.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos) << raw;
  const std::string events = "data: 1\n\ndata: 2\n\nevent: e\ndata: 3\n\n: note\n\n";
  char size[16];
  std::snprintf(size, sizeof(size), "%zx", events.size());
  EXPECT_EQ(raw.substr(body + 4), std::string(size) + "\r\n" + events + "\r\n0\r\n\r\n");
  EXPECT_EQ(server_->stats().queued_bytes, 0u);
}

TEST_F(ServerTest, StalledClientIsCutOffAtWriteTimeout) {
  ServerOptions o;
  o.write_timeout = 300ms;
  StartServer(o);
  std::promise<void> cancelled;
  std::atomic<bool> stop{false};
  RawSocket s(port_);  // sends the request, then never reads
  ASSERT_TRUE(s.Send("POST /park HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_TRUE(parked_.WaitFor(1));
  auto w = parked_.writers[0];
  w->OnCancel([&] {
    stop = true;
    cancelled.set_value();
  });
  std::thread engine([&] {
    const std::string pad(16 << 10, 'p');
    while (!stop && w->SendSse(pad)) std::this_thread::sleep_for(1ms);
  });
  // The socket buffers fill within ~0.5 s; the stalled write then ends the stream.
  EXPECT_EQ(cancelled.get_future().wait_for(10s), std::future_status::ready);
  stop = true;
  engine.join();
  EXPECT_FALSE(w->SendSse("late"));
}

TEST_F(ServerTest, DisconnectFiresCancellationWhileWaiting) {
  StartServer();
  std::promise<void> cancelled;
  {
    RawSocket s(port_);
    ASSERT_TRUE(s.Send("POST /park HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"));
    ASSERT_TRUE(parked_.WaitFor(1));
    parked_.writers[0]->OnCancel([&] { cancelled.set_value(); });
  }  // closes the socket
  ASSERT_EQ(cancelled.get_future().wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(parked_.writers[0]->cancelled());
  EXPECT_FALSE(parked_.writers[0]->SendSse("late"));
}

TEST_F(ServerTest, DisconnectFiresCancellationMidStream) {
  StartServer();
  std::promise<void> cancelled;
  std::atomic<bool> stop{false};
  Client client("127.0.0.1", port_);
  std::thread engine([&] {
    ASSERT_TRUE(parked_.WaitFor(1));
    auto w = parked_.writers[0];
    w->OnCancel([&] {
      cancelled.set_value();
      stop = true;
    });
    while (!stop && w->SendSse("tick")) std::this_thread::sleep_for(2ms);
  });
  int seen = 0;
  auto r = client.SendSse("POST", "/park", "{}", [&](std::string_view) { return ++seen < 3; });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(cancelled.get_future().wait_for(5s), std::future_status::ready);
  stop = true;
  engine.join();
}

TEST_F(ServerTest, DroppedWriterGets500) {
  StartServer();
  Client client("127.0.0.1", port_);
  auto r = client.Send("GET", "/drop");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  EXPECT_NE(r->body.find("server_error"), std::string::npos);
}

TEST_F(ServerTest, OversizedBodyIs413) {
  ServerOptions o;
  o.max_body_bytes = 1024;
  StartServer(o);
  Client client("127.0.0.1", port_);
  auto r = client.Send("POST", "/echo", std::string(4096, 'x'));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("\"code\":\"request_too_large\""), std::string::npos) << r->body;
  // Announced but not (yet) sent: refused from the header alone.
  RawSocket s(port_);
  ASSERT_TRUE(s.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\nxx"));
  EXPECT_NE(s.ReadAll().find("413"), std::string::npos);
  EXPECT_EQ(client.Send("POST", "/echo", "small")->status, 200);
}

TEST_F(ServerTest, MalformedHttpIs400AndServerKeepsServing) {
  StartServer();
  for (const char* junk : {"GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "POST /echo HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                           "GET /health HTTP/1.1\r\nBad Header\r\n\r\n"}) {
    RawSocket s(port_);
    ASSERT_TRUE(s.Send(junk));
    const std::string reply = s.ReadAll();
    EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << junk << " -> " << reply;
    EXPECT_NE(reply.find("\"error\""), std::string::npos);
  }
  Client client("127.0.0.1", port_);
  EXPECT_EQ(client.Send("GET", "/health")->status, 200);
  EXPECT_GE(server_->stats().bad_requests, 4u);
}

TEST_F(ServerTest, OversizedHeaderIs431) {
  ServerOptions o;
  o.max_header_bytes = 1024;
  StartServer(o);
  RawSocket s(port_);
  ASSERT_TRUE(s.Send("GET /health HTTP/1.1\r\nX-Big: " + std::string(4000, 'a') + "\r\n\r\n"));
  EXPECT_EQ(s.ReadAll().rfind("HTTP/1.1 431", 0), 0u);
}

TEST_F(ServerTest, SlowlorisIsCutOffAtRequestTimeout) {
  ServerOptions o;
  o.request_timeout = 300ms;
  StartServer(o);
  RawSocket s(port_);
  ASSERT_TRUE(s.Send("GET /health HTTP/1.1\r\nHost: x\r\n"));  // never finishes the header
  const auto start = std::chrono::steady_clock::now();
  s.ReadAll();  // returns when the server closes
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  Client client("127.0.0.1", port_);
  EXPECT_EQ(client.Send("GET", "/health")->status, 200);
}

TEST_F(ServerTest, ServesManyConcurrentConnectionsWithTwoThreads) {
  ServerOptions o;
  o.io_threads = 2;
  StartServer(o);
  constexpr int kConnections = 200;
  std::vector<std::unique_ptr<RawSocket>> sockets;
  for (int i = 0; i < kConnections; ++i) {
    sockets.push_back(std::make_unique<RawSocket>(port_, 10000));
    ASSERT_TRUE(sockets.back()->connected());
    ASSERT_TRUE(sockets.back()->Send("POST /park HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  }
  // All 200 requests are in flight at once: none has been answered yet.
  ASSERT_TRUE(parked_.WaitFor(kConnections)) << parked_.writers.size();
  EXPECT_EQ(server_->stats().exchanges_active, static_cast<uint64_t>(kConnections));
  std::thread answerer([&] {
    for (auto& w : parked_.writers) w->Respond(Response::Text(200, "done"));
  });
  for (auto& s : sockets) {
    const std::string reply = s->ReadUntil("done");
    EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u);
  }
  answerer.join();
}

TEST_F(ServerTest, GracefulShutdownLetsARunningStreamFinish) {
  StartServer();
  std::vector<std::string> events;
  std::thread client_thread([&] {
    Client client("127.0.0.1", port_);
    auto r = client.SendSse("POST", "/park", "{}", [&](std::string_view d) {
      events.emplace_back(d);
      return true;
    });
    EXPECT_TRUE(r.ok());
  });
  ASSERT_TRUE(parked_.WaitFor(1));
  auto w = parked_.writers[0];
  Client idle("127.0.0.1", port_);
  ASSERT_EQ(idle.Send("GET", "/health")->status, 200);  // an idle keep-alive connection

  std::thread engine([w] {
    for (int i = 0; i < 10; ++i) {
      w->SendSse(std::string(1, 'e').append(std::to_string(i)));
      std::this_thread::sleep_for(20ms);
    }
    w->EndSse();
  });
  const auto start = std::chrono::steady_clock::now();
  server_->Shutdown(5s);  // returns once the stream has ended
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  engine.join();
  client_thread.join();
  EXPECT_EQ(events.size(), 10u);
  EXPECT_FALSE(w->cancelled());
  EXPECT_FALSE(idle.Send("GET", "/health").ok());  // no longer accepting
  server_.reset();
}

TEST_F(ServerTest, ShutdownDeadlineCancelsAStuckStream) {
  StartServer();
  std::promise<void> cancelled;
  RawSocket s(port_);
  ASSERT_TRUE(s.Send("POST /park HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_TRUE(parked_.WaitFor(1));
  parked_.writers[0]->OnCancel([&] { cancelled.set_value(); });
  parked_.writers[0]->SendSse("first");
  server_->Shutdown(200ms);
  EXPECT_EQ(cancelled.get_future().wait_for(1s), std::future_status::ready);
  server_.reset();
  EXPECT_FALSE(parked_.writers[0]->SendSse("after shutdown"));
}

TEST_F(ServerTest, PortInUseIsAnError) {
  StartServer();
  ServerOptions o;
  o.port = port_;
  Server second(o, Router{});
  EXPECT_FALSE(second.Start().ok());
}

}  // namespace
}  // namespace pagoda::http
