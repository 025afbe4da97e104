// The gateway in-process, in front of in-process upstreams that behave or
// misbehave on purpose (garbage, close mid-stream, hang, 5xx), driven with
// the blocking http::Client. Proxy, retries, deadlines, load guards, aliases,
// reload and the admin API.
#include "gateway/gateway.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "gateway/gateway_fixture.h"
#include "http/client.h"
#include "http/server.h"
#include "http/test_pki.h"
#include "http/tls_client.h"

namespace pagoda::gateway {
namespace {

using namespace std::chrono_literals;

// A well-behaved replica: /health, chat (stream or not), and a generic path.
// `tag` goes into every answer so tests see which replica answered.
class GoodUpstream {
 public:
  explicit GoodUpstream(std::string tag, int status = 200, http::TlsFiles tls = {}) : tag_(std::move(tag)) {
    http::Router r;
    r.Add("GET", "/health", http::SyncHandler([](const http::Request&) { return http::Response::Json(200, "{}"); }));
    r.Add("POST", "/v1/chat/completions",
          http::Handler([this, status](const http::Request& req, std::shared_ptr<http::ResponseWriter> w) {
            ++calls;
            last_auth = req.headers.Find("Authorization") ? *req.headers.Find("Authorization") : "";
            const auto body = nlohmann::json::parse(req.body);
            last_model = body.value("model", "");
            if (status != 200) {
              w->Respond(http::Response::Json(status, R"({"error":{"message":"boom"}})"));
              return;
            }
            if (!body.value("stream", false)) {
              w->Respond(http::Response::Json(200, nlohmann::json{{"tag", tag_}, {"model", last_model}}.dump()));
              return;
            }
            std::thread([this, w] {
              for (int i = 0; i < 3; ++i) {
                w->SendSse(nlohmann::json{{"tag", tag_}, {"i", i}}.dump());
                if (i == 0 && gate) gate->wait_for(5s);
              }
              w->SendSse("[DONE]");
              w->EndSse();
            }).detach();
          }));
    r.Add("GET", "/v1/other", http::SyncHandler([this](const http::Request& req) {
            return http::Response::Json(200, nlohmann::json{{"tag", tag_}, {"target", req.target}}.dump());
          }));
    r.Add("POST", "/v1/slow", http::Handler([this](const http::Request&, std::shared_ptr<http::ResponseWriter> w) {
            // Streams until the client is gone.
            w->OnCancel([this] { cancelled = true; });
            std::thread([w] {
              for (int i = 0; i < 200 && w->SendSse("{\"tick\":1}"); ++i) std::this_thread::sleep_for(20ms);
              w->EndSse();
            }).detach();
          }));
    http::ServerOptions so;
    so.tls = std::move(tls);
    server_ = std::make_unique<http::Server>(so, std::move(r));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~GoodUpstream() { server_->Shutdown(1s); }
  std::string url() const {
    return (server_->tls() ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(server_->port());
  }

  std::atomic<int> calls{0};
  std::atomic<bool> cancelled{false};
  std::string last_auth, last_model;
  std::shared_future<void>* gate = nullptr;  // holds the stream after its first event

 private:
  std::string tag_;
  std::unique_ptr<http::Server> server_;
};

// A TCP listener that runs `serve(fd)` for each connection (raw bytes).
class RawUpstream {
 public:
  explicit RawUpstream(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 16);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        char buf[65536];
        (void)::recv(c, buf, sizeof(buf), 0);  // the request (small)
        std::thread([this, c] {
          serve_(c);
          ::close(c);
        }).detach();
      }
    });
  }
  ~RawUpstream() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::function<void(int)> serve_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

void Send(int fd, std::string_view s) { (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

// A streaming chat request for model "m" (Connection: close) on a raw socket.
void SendStreamingChat(int fd) {
  const std::string body = R"({"model":"m","stream":true,"messages":[]})";
  Send(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\nConnection: close\r\n"
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

// An SSE response head and one chunked event {"i":0}, then `wait` before the connection closes.
void SendOneEventThenWait(int fd, std::chrono::milliseconds wait) {
  Send(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
  const std::string ev = "data: {\"i\":0}\n\n";
  char len[16];
  std::snprintf(len, sizeof(len), "%zx\r\n", ev.size());
  Send(fd, std::string(len) + ev + "\r\n");
  std::this_thread::sleep_for(wait);
}

std::string ModelToml(const std::string& name, const std::vector<std::string>& urls, const std::string& policy) {
  std::string s = "[[models]]\nname = \"" + name + "\"\npolicy = \"" + policy +
                  "\"\n[[models.deployments]]\nversion = \"v1\"\n";
  for (size_t i = 0; i < urls.size(); ++i) {
    s += "[[models.deployments.replicas]]\nurl = \"" + urls[i] + "\"\nname = \"" + name + "-" + std::to_string(i) +
         "\"\n";
  }
  return s;
}

using GatewayTest = GatewayFixture;

TEST_F(GatewayTest, RelaysAnswerAndNamesTheDeployment) {
  GoodUpstream a("a");
  StartGateway(ModelToml("m", {a.url()}, "least_loaded"));
  auto r = Chat("m");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(nlohmann::json::parse(r.body)["tag"], "a");
  ASSERT_NE(r.headers.Find("x-pagoda-deployment"), nullptr);
  EXPECT_EQ(*r.headers.Find("x-pagoda-deployment"), "m@v1");
  EXPECT_EQ(*r.headers.Find("x-pagoda-replica"), "m-0");
  auto models = client_->Send("GET", "/v1/models");
  ASSERT_TRUE(models.ok());
  const auto j = nlohmann::json::parse(models->body);
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["id"], "m@v1");
  auto other = client_->Send("GET", "/v1/other?x=1");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(nlohmann::json::parse(other->body)["target"], "/v1/other?x=1");
}

TEST_F(GatewayTest, StreamsEachEventBeforeTheUpstreamFinishes) {
  GoodUpstream a("a");
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  a.gate = &gate;
  StartGateway(ModelToml("m", {a.url()}, "round_robin"));
  std::vector<std::string> events;
  bool first_before_rest = false;
  const std::string body = R"({"model":"m","stream":true,"messages":[]})";
  auto r = client_->SendSse("POST", "/v1/chat/completions", body, [&](std::string_view d) {
    events.emplace_back(d);
    if (events.size() == 1) {
      first_before_rest = true;  // the upstream is still held at its first event
      release.set_value();
    }
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(first_before_rest);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(nlohmann::json::parse(events[2])["i"], 2);
  EXPECT_EQ(events[3], "[DONE]");
  EXPECT_EQ(*r->headers.Find("x-pagoda-deployment"), "m@v1");
}

TEST_F(GatewayTest, UnknownModelIs404ErrorObject) {
  GoodUpstream a("a");
  StartGateway(ModelToml("m", {a.url()}, "least_loaded"));
  auto r = Chat("nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(ErrorCode(r.body), "model_not_found");
  EXPECT_EQ(Chat("m@v3").status, 404);
  auto bad = client_->Send("POST", "/v1/chat/completions", "{not json");
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(a.calls.load(), 0);
}

TEST_F(GatewayTest, GarbageUpstreamIs502AndTheGatewayKeepsServing) {
  RawUpstream garbage([](int fd) { Send(fd, "this is not http\r\n\r\n"); });
  GoodUpstream a("a");
  StartGateway(ModelToml("bad", {garbage.url()}, "least_loaded") + ModelToml("good", {a.url()}, "least_loaded"));
  auto r = Chat("bad");
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(ErrorCode(r.body), "bad_gateway");
  EXPECT_EQ(Chat("good").status, 200);
}

TEST_F(GatewayTest, FailureBeforeFirstByteIsRetriedOnAnotherReplica) {
  RawUpstream garbage([](int fd) { Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: zz\r\n\r\n"); });
  GoodUpstream a("a");
  GoodUpstream five("five", 503);
  // round_robin starts with the broken ones.
  StartGateway(ModelToml("m", {garbage.url(), a.url()}, "round_robin") +
               ModelToml("n", {five.url(), a.url()}, "round_robin"));
  auto r = Chat("m");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(nlohmann::json::parse(r.body)["tag"], "a");
  auto s = Chat("n");
  EXPECT_EQ(s.status, 200);
  EXPECT_EQ(five.calls.load(), 1);
  EXPECT_EQ(gw_->metrics().retries_total(), 2u);
  // Passive ejection (eject_after_failures = 1): the broken ones get no more traffic.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Chat("n").status, 200);
  EXPECT_EQ(five.calls.load(), 1);
  auto admin = client_->Send("GET", "/admin/replicas", "", [] {
    http::Headers h;
    h.Add("Authorization", "Bearer admin-secret");
    return h;
  }());
  ASSERT_TRUE(admin.ok());
  EXPECT_NE(admin->body.find("\"circuit\":\"open\""), std::string::npos) << admin->body;
  const std::string metrics = client_->Send("GET", "/metrics")->body;
  EXPECT_NE(metrics.find("pagoda_gateway_retries_total{deployment=\"n@v1\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("pagoda_gateway_replica_circuit_state{replica=\"n-0\",deployment=\"n@v1\",zone=\"\"} 1"), std::string::npos);
}

TEST_F(GatewayTest, HangingUpstreamIs504) {
  RawUpstream hang([](int) { std::this_thread::sleep_for(1500ms); });
  StartGateway(ModelToml("m", {hang.url()}, "least_loaded"));
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Chat("m");
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(ErrorCode(r.body), "upstream_timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1400ms);  // first_byte_timeout_ms = 500
}

TEST_F(GatewayTest, DeadlineHeaderEndsTheStream) {
  GoodUpstream a("a");
  StartGateway(ModelToml("m", {a.url()}, "least_loaded"));
  http::Headers h;
  h.Add("x-pagoda-deadline-ms", "200");
  std::vector<std::string> events;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = client_->SendSse("POST", "/v1/slow", R"({"model":"m"})", [&](std::string_view d) {
    events.emplace_back(d);
    return true;
  }, h);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(ErrorCode(events.back()), "upstream_error");
  for (int i = 0; i < 100 && !a.cancelled; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(a.cancelled.load());  // the upstream request ended too
}

TEST_F(GatewayTest, MidStreamCloseEndsWithAnErrorEvent) {
  RawUpstream cut([](int fd) { SendOneEventThenWait(fd, 50ms); });
  StartGateway(ModelToml("m", {cut.url()}, "least_loaded"));
  std::vector<std::string> events;
  auto r = Chat("m", true, &events);
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "{\"i\":0}");
  EXPECT_EQ(ErrorCode(events[1]), "upstream_error");
}

TEST_F(GatewayTest, IdleUpstreamMidStreamEndsWithATimeoutEvent) {
  RawUpstream idle([](int fd) { SendOneEventThenWait(fd, 1500ms); });
  StartGateway(ModelToml("m", {idle.url()}, "least_loaded"), "idle_timeout_ms = 300\n");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> events;
  auto r = Chat("m", true, &events);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1400ms);
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "{\"i\":0}");
  EXPECT_EQ(ErrorCode(events[1]), "upstream_error");
  EXPECT_NE(events[1].find("timed out"), std::string::npos) << events[1];
}

TEST_F(GatewayTest, ClientDisconnectCancelsTheUpstreamAtOnce) {
  GoodUpstream a("a");
  StartGateway(ModelToml("m", {a.url()}, "least_loaded"));
  int n = 0;
  auto r = client_->SendSse("POST", "/v1/slow", R"({"model":"m"})", [&](std::string_view) { return ++n < 2; });
  ASSERT_TRUE(r.ok());
  for (int i = 0; i < 200 && !a.cancelled; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(a.cancelled.load());
}

TEST_F(GatewayTest, AliasesRespectSelfHostedOnlyAndFallBackOnlyWhenDown) {
  GoodUpstream own("own");
  GoodUpstream ext("ext");
  StartGateway(ModelToml("m", {own.url()}, "least_loaded") +
               "[[upstreams]]\nname = \"x\"\nurl = \"" + ext.url() + "/v1\"\napi_key_env = \"EXT_KEY\"\n"
               "model = \"gpt-x\"\n"
               "[[aliases]]\nname = \"private\"\nmodel = \"m\"\nself_hosted_only = true\n"
               "[[aliases]]\nname = \"chat\"\nmodel = \"m@v1\"\nfallback = \"x\"\n");
  http::Headers auth;
  auth.Add("Authorization", "Bearer client-key");
  EXPECT_EQ(nlohmann::json::parse(Chat("chat", false, nullptr, auth).body)["tag"], "own");
  EXPECT_EQ(own.last_auth, "Bearer client-key");  // own replicas see the client's header
  EXPECT_EQ(ext.calls.load(), 0);
  // Every own replica down.
  for (const auto& r : gw_->table()->AllReplicas()) {
    if (!r->external()) r->state().OnProbe(false, std::chrono::steady_clock::now());
  }
  auto p = Chat("private");
  EXPECT_EQ(p.status, 503);
  EXPECT_EQ(ErrorCode(p.body), "no_healthy_replica");
  EXPECT_EQ(ext.calls.load(), 0);
  auto f = Chat("chat", false, nullptr, auth);
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(nlohmann::json::parse(f.body)["tag"], "ext");
  EXPECT_EQ(*f.headers.Find("x-pagoda-deployment"), "upstream:x");
  EXPECT_EQ(ext.last_auth, "Bearer ext-secret");  // the key from the environment, not the client's
  EXPECT_EQ(ext.last_model, "gpt-x");
}

TEST_F(GatewayTest, ReloadRefusesABadConfigAndKeepsTheOld) {
  GoodUpstream a("a");
  GoodUpstream b("b");
  StartGateway(ModelToml("m", {a.url()}, "least_loaded"));
  http::Headers admin;
  admin.Add("Authorization", "Bearer admin-secret");
  EXPECT_EQ(client_->Send("POST", "/admin/reload")->status, 401);
  EXPECT_EQ(client_->Send("GET", "/admin/replicas", "", [] {
              http::Headers h;
              h.Add("Authorization", "Bearer wrong");
              return h;
            }())->status, 401);
  Write("[[models]]\nname = \"m\"\npolicy = 3\n");
  auto refused = client_->Send("POST", "/admin/reload", "", admin);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 400);
  EXPECT_NE(refused->body.find(":3: "), std::string::npos) << refused->body;  // names the line
  EXPECT_EQ(nlohmann::json::parse(Chat("m").body)["tag"], "a");              // the old config serves
  auto routing = client_->Send("GET", "/admin/routing", "", admin);
  EXPECT_NE(routing->body.find("\"ok\":false"), std::string::npos);
  Write("[gateway]\nadmin_key_env = \"GW_TEST_ADMIN\"\nallow_insecure_keys = true\n" + ModelToml("m2", {b.url()}, "session"));
  EXPECT_EQ(client_->Send("POST", "/admin/reload", "", admin)->status, 200);
  EXPECT_EQ(Chat("m").status, 404);
  EXPECT_EQ(nlohmann::json::parse(Chat("m2").body)["tag"], "b");
}

TEST_F(GatewayTest, ServesHttpsToAnHttpsReplicaAndReloadsItsCertificate) {
  http::testing::TestPki pki;
  const http::TlsFiles listener = pki.Issue("gateway", 1001);
  GoodUpstream replica("tls-replica", 200, pki.Issue("replica", 5005));
  const std::string models = "[[models]]\nname = \"m\"\npolicy = \"least_loaded\"\n[[models.deployments]]\n"
                             "version = \"v1\"\n[[models.deployments.replicas]]\nurl = \"" + replica.url() +
                             "\"\nca_file = \"" + pki.ca_file() + "\"\n";
  auto tls_table = [](const http::TlsFiles& f) {
    return "tls_cert = \"" + f.cert_file + "\"\ntls_key = \"" + f.key_file + "\"\n";
  };
  StartGateway(models, tls_table(listener));
  auto chat_over_tls = [&](long* serial) {
    http::testing::TlsClient c(gw_->port(), pki.ca_file());
    if (!c.ok()) return c.error();
    const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
    c.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: "
           "application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    *serial = c.peer_serial();
    return c.ReadAll();
  };
  long serial = 0;
  std::string r = chat_over_tls(&serial);
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_NE(r.find("tls-replica"), std::string::npos) << r;  // through https to the replica, verified by ca_file
  EXPECT_EQ(serial, 1001);

  // A certificate that does not load refuses the whole reload; the old one serves.
  const std::string junk = pki.Write("junk.pem", "junk\n");
  Write("[gateway]\nadmin_key_env = \"GW_TEST_ADMIN\"\n" + tls_table({junk, listener.key_file}) + models);
  const Status refused = gw_->Reload();
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(gw_->last_reload_error().find(junk), std::string::npos) << gw_->last_reload_error();
  r = chat_over_tls(&serial);
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_EQ(serial, 1001);

  Write("[gateway]\nadmin_key_env = \"GW_TEST_ADMIN\"\n" + tls_table(pki.Issue("renewed", 2002)) + models);
  ASSERT_TRUE(gw_->Reload().ok()) << gw_->last_reload_error();
  r = chat_over_tls(&serial);
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_EQ(serial, 2002);
  EXPECT_EQ(gw_->server_stats().tls_handshake_failures, 0u);
}

TEST_F(GatewayTest, ReloadDuringAStreamKeepsItRunning) {
  GoodUpstream a("a");
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  a.gate = &gate;
  StartGateway(ModelToml("m", {a.url()}, "least_loaded"));
  std::vector<std::string> events;
  std::thread reloader;
  auto r = client_->SendSse("POST", "/v1/chat/completions", R"({"model":"m","stream":true})",
                            [&](std::string_view d) {
                              events.emplace_back(d);
                              if (events.size() == 1) {
                                Write("[gateway]\nadmin_key_env = \"GW_TEST_ADMIN\"\n" +
                                      ModelToml("other", {a.url()}, "least_loaded"));
                                EXPECT_TRUE(gw_->Reload().ok());
                                release.set_value();
                              }
                              return true;
                            });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST_F(GatewayTest, CountsPredictedAndReportedCachedTokensFromBodiesAndStreams) {
  RawUpstream json([](int fd) {
    const std::string body =
        R"({"object":"chat.completion","usage":{"prompt_tokens":70,"prompt_tokens_details":{"cached_tokens":48}}})";
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                 "\r\nConnection: close\r\n\r\n" + body);
  });
  RawUpstream sse([](int fd) {
    std::string out;
    for (const char* ev : {R"({"choices":[{"delta":{"content":"x"}}],"usage":null})",
                                 R"({"choices":[],"usage":{"prompt_tokens":40,"prompt_tokens_details":{"cached_tokens":32}}})",
                           "[DONE]"}) {
      out += "data: " + std::string(ev) + "\n\n";
    }
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + out);
  });
  StartGateway(ModelToml("j", {json.url()}, "least_loaded") + ModelToml("s", {sse.url()}, "cache_aware"));
  auto r = Chat("j");
  EXPECT_EQ(r.status, 200);
  ASSERT_NE(r.headers.Find("x-pagoda-predicted-cached-tokens"), nullptr);
  EXPECT_EQ(*r.headers.Find("x-pagoda-predicted-cached-tokens"), "0");
  std::vector<std::string> events;
  auto s = Chat("s", /*stream=*/true, &events);
  EXPECT_EQ(s.status, 200);
  EXPECT_NE(s.headers.Find("x-pagoda-predicted-cached-tokens"), nullptr);
  ASSERT_EQ(events.size(), 3u);
  ASSERT_TRUE(WaitIdle());
  // The load guard is released as the stream ends, just before the
  // exchange records its usage: wait for the stream's figures to land.
  const std::string stream_line = "pagoda_gateway_cache_responses_with_usage_total{replica=\"s-0\",deployment=\"s@v1\"} 1\n";
  std::string m;
  for (int i = 0; i < 200; ++i) {
    auto page = client_->Send("GET", "/metrics");
    ASSERT_TRUE(page.ok());
    m = page->body;
    if (m.find(stream_line) != std::string::npos) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_NE(m.find("pagoda_gateway_reported_cached_tokens_total{replica=\"j-0\",deployment=\"j@v1\"} 48\n"),
            std::string::npos) << m;
  EXPECT_NE(m.find("pagoda_gateway_reported_prompt_tokens_total{replica=\"j-0\",deployment=\"j@v1\"} 70\n"),
            std::string::npos);
  EXPECT_NE(m.find("pagoda_gateway_reported_cached_tokens_total{replica=\"s-0\",deployment=\"s@v1\"} 32\n"),
            std::string::npos);
  EXPECT_NE(m.find("pagoda_gateway_cache_responses_with_usage_total{replica=\"s-0\",deployment=\"s@v1\"} 1\n"),
            std::string::npos);
  EXPECT_NE(m.find("pagoda_gateway_predicted_cached_tokens_total{replica=\"s-0\",deployment=\"s@v1\"} 0\n"),
            std::string::npos);
}

TEST_F(GatewayTest, RelaysSseEventsAsTheUpstreamFramedThem) {
  // Fields other than data: (event:, id:, retry:, unknown ones) and comment
  // lines reach the client unchanged and in order; the reference is the
  // upstream's own bytes.
  const std::string events =
      ": upstream says hello\n\n"
      "event: delta\nid: 1\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n"
      "retry: 3000\nid: 2\n: a comment inside an event\ndata: line one\ndata: line two\nx-custom: kept\n\n"
      "data: [DONE]\n\n";
  RawUpstream up([&](int fd) {
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + events);
  });
  StartGateway(ModelToml("m", {up.url()}, "least_loaded"));
  auto r = client_->Send("POST", "/v1/chat/completions", R"({"model":"m","stream":true,"messages":[]})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, events);
}

// Streams `events` SSE events of ~1 KiB ("data: {"i":N,"pad":"..."}") as fast
// as its server takes them; its server's queued bytes show how far it ran ahead.
class FloodUpstream {
 public:
  explicit FloodUpstream(int events) {
    http::Router r;
    r.Add("POST", "/v1/chat/completions",
          http::Handler([events](const http::Request&, std::shared_ptr<http::ResponseWriter> w) {
            std::thread([w, events] {
              for (int i = 0; i < events && w->SendSse(Event(i)); ++i) {
              }
              w->EndSse();
            }).detach();
          }));
    server_ = std::make_unique<http::Server>(http::ServerOptions{}, std::move(r));
    EXPECT_TRUE(server_->Start().ok());
  }
  ~FloodUpstream() { server_->Shutdown(1s); }
  static std::string Event(int i) { return "{\"i\":" + std::to_string(i) + ",\"pad\":\"" + std::string(1000, 'p') + "\"}"; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  uint64_t queued_bytes() const { return server_->stats().queued_bytes; }

 private:
  std::unique_ptr<http::Server> server_;
};

// The HTTP/1.1 chunked body of `raw` (a whole response), de-chunked.
std::string Dechunk(const std::string& raw) {
  size_t pos = raw.find("\r\n\r\n");
  if (pos == std::string::npos) return "<no header end>";
  pos += 4;
  std::string out;
  for (;;) {
    const size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) return out + "<truncated>";
    const size_t n = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
    if (n == 0) return out;
    out.append(raw, eol + 2, n);
    pos = eol + 2 + n + 2;
  }
}

TEST_F(GatewayTest, SlowClientHoldsTheUpstreamBackInsteadOfQueueingItsStream) {
  constexpr int kEvents = 64 * 1024;  // ~64 MiB of SSE
  FloodUpstream up(kEvents);
  deadline_ms_ = 60'000;
  StartGateway(ModelToml("m", {up.url()}, "least_loaded"));
  // A client with a small receive buffer that sends its request, then does
  // not read for a while.
  const int fd = ConnectRaw(64 << 10);
  ASSERT_GE(fd, 0);
  SendStreamingChat(fd);
  uint64_t gateway_max = 0, upstream_max = 0;
  for (auto until = std::chrono::steady_clock::now() + 1500ms; std::chrono::steady_clock::now() < until;) {
    gateway_max = std::max(gateway_max, gw_->server_stats().queued_bytes);
    upstream_max = std::max(upstream_max, up.queued_bytes());
    std::this_thread::sleep_for(5ms);
  }
  // The gateway keeps about 1 MiB (plus one read) for this client; the rest
  // waits in the upstream, which the gateway stopped reading.
  EXPECT_LT(gateway_max, uint64_t{2} << 20);
  EXPECT_GT(upstream_max, uint64_t{32} << 20);
  // Now the client reads everything, intact and in order.
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string raw;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    raw.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  std::string want;
  for (int i = 0; i < kEvents; ++i) want += "data: " + FloodUpstream::Event(i) + "\n\n";
  const std::string got = Dechunk(raw);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the stream differs from what the upstream sent";
  EXPECT_EQ(gw_->server_stats().queued_bytes, 0u);
}

TEST_F(GatewayTest, EventsOfOneUpstreamReadReachTheClientInOneChunk) {
  // The whole stream arrives in one upstream read: it leaves in one chunk
  // (not one per event), and its usage chunk is still read.
  std::string events;
  for (int i = 0; i < 8; ++i) events += "data: {\"i\":" + std::to_string(i) + "}\n\n";
  events += R"(data: {"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":4}}})";
  events += "\n\ndata: [DONE]\n\n";
  RawUpstream up([&](int fd) {
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + events);
  });
  StartGateway(ModelToml("m", {up.url()}, "least_loaded"));
  const int fd = ConnectRaw();
  ASSERT_GE(fd, 0);
  SendStreamingChat(fd);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string raw;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const size_t head_end = raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos) << raw;
  char size[16];
  std::snprintf(size, sizeof(size), "%zx", events.size());
  EXPECT_EQ(raw.substr(head_end + 4), std::string(size) + "\r\n" + events + "\r\n0\r\n\r\n");
  ASSERT_TRUE(WaitIdle());
  const std::string usage_line = "pagoda_gateway_reported_cached_tokens_total{replica=\"m-0\",deployment=\"m@v1\"} 4\n";
  std::string m;
  for (int i = 0; i < 200 && m.find(usage_line) == std::string::npos; ++i) {
    auto page = client_->Send("GET", "/metrics");
    ASSERT_TRUE(page.ok());
    m = page->body;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_NE(m.find(usage_line), std::string::npos) << m;
}

}  // namespace
}  // namespace pagoda::gateway
