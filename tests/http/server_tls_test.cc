// http::Server over TLS: a throwaway CA and server certificates made at test
// time (test_pki.h), a raw OpenSSL client (tls_client.h) and raw sockets for
// what a TLS client would never send.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>
#include <vector>

#include "http/raw_socket.h"
#include "http/server.h"
#include "http/test_pki.h"
#include "http/tls_client.h"

namespace pagoda::http {
namespace {

using namespace std::chrono_literals;
using testing::RawSocket;
using testing::TestPki;
using testing::TlsClient;

// Polls `pred` for up to `limit`.
template <class Pred>
bool Eventually(Pred pred, std::chrono::milliseconds limit = 5s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

class ServerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override { files_ = pki_.Issue("server", 1001); }

  void StartServer(ServerOptions options = {}) {
    if (!options.tls.enabled()) options.tls = files_;
    Router router;
    router.Add("GET", "/secure", SyncHandler([](const Request& r) {
                 return Response::Text(200, r.secure ? "secure=true" : "secure=false");
               }));
    router.Add("POST", "/echo", SyncHandler([](const Request& r) { return Response::Text(200, r.body); }));
    router.Add("POST", "/park", Handler([this](const Request&, std::shared_ptr<ResponseWriter> w) {
                 std::lock_guard<std::mutex> lock(mu_);
                 parked_.push_back(std::move(w));
                 cv_.notify_all();
               }));
    server_ = std::make_unique<Server>(options, std::move(router));
    const Status st = server_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    port_ = server_->port();
  }
  void TearDown() override {
    if (server_) server_->Shutdown(2s);
  }
  std::shared_ptr<ResponseWriter> WaitParked() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, 5s, [&] { return !parked_.empty(); })) return nullptr;
    return parked_.back();
  }
  // A fresh connection's view: the body of GET /secure and the certificate's serial.
  long ServedSerial() {
    TlsClient c(port_, pki_.ca_file());
    if (!c.ok()) return -1;
    const std::string r = c.Get("/secure");
    return r.find("secure=true") != std::string::npos ? c.peer_serial() : -2;
  }

  TestPki pki_;
  TlsFiles files_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<ResponseWriter>> parked_;
};

TEST_F(ServerTlsTest, ServesHttpsAndMarksRequestsSecure) {
  StartServer();
  EXPECT_TRUE(server_->tls());
  TlsClient c(port_, pki_.ca_file());
  ASSERT_TRUE(c.ok()) << c.error();
  const std::string r = c.Get("/secure");
  EXPECT_NE(r.find("HTTP/1.1 200 OK"), std::string::npos) << r;
  EXPECT_NE(r.find("secure=true"), std::string::npos) << r;
  EXPECT_EQ(c.peer_serial(), 1001);
  EXPECT_EQ(c.protocol(), "TLSv1.3");
}

TEST_F(ServerTlsTest, PlainServerMarksRequestsNotSecure) {
  Router router;
  router.Add("GET", "/secure", SyncHandler([](const Request& r) {
               return Response::Text(200, r.secure ? "secure=true" : "secure=false");
             }));
  Server plain(ServerOptions{}, std::move(router));
  ASSERT_TRUE(plain.Start().ok());
  EXPECT_FALSE(plain.tls());
  RawSocket s(plain.port());
  s.Send("GET /secure HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(s.ReadAll().find("secure=false"), std::string::npos);
  EXPECT_EQ(plain.ReloadTls().code(), StatusCode::kFailedPrecondition);
  plain.Shutdown(1s);
}

TEST_F(ServerTlsTest, AnswersHttp11ToAlpnNeverH2) {
  StartServer();
  TlsClient c(port_, pki_.ca_file());
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c.alpn(), "http/1.1");
}

TEST_F(ServerTlsTest, KeepsTlsConnectionsAlive) {
  StartServer();
  TlsClient c(port_, pki_.ca_file());
  ASSERT_TRUE(c.ok()) << c.error();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello"));
    const std::string r = c.ReadUntil("hello");
    EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  }
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
  EXPECT_EQ(server_->stats().requests, 3u);
}

TEST_F(ServerTlsTest, PlainHttpToTheTlsPortGets400AndServerKeepsServing) {
  StartServer();
  RawSocket raw(port_);
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"));
  const std::string r = raw.ReadAll();  // the server closes
  EXPECT_NE(r.find("HTTP/1.1 400"), std::string::npos) << r;
  EXPECT_NE(r.find("plain_http_to_https_port"), std::string::npos) << r;
  EXPECT_EQ(r.find("hello"), std::string::npos);
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
  EXPECT_EQ(server_->stats().bad_requests, 1u);
  EXPECT_EQ(server_->stats().requests, 0u);
  EXPECT_EQ(ServedSerial(), 1001);
}

TEST_F(ServerTlsTest, GarbageInsteadOfAHandshakeClosesTheConnection) {
  StartServer();
  RawSocket raw(port_);
  ASSERT_TRUE(raw.Send(std::string("\x16\x03\x01\x00\x05garbagegarbage", 19)));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string r = raw.ReadAll();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_EQ(r.find("HTTP/1.1"), std::string::npos) << "no HTTP answer to a broken handshake";
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
  EXPECT_EQ(ServedSerial(), 1001);
}

TEST_F(ServerTlsTest, HandshakeMustCompleteWithinTheRequestTimeout) {
  ServerOptions o;
  o.request_timeout = 300ms;
  StartServer(o);
  RawSocket raw(port_, 10'000);
  ASSERT_TRUE(raw.Send(std::string("\x16\x03\x01", 3)));  // a ClientHello's first bytes, then nothing
  const auto t0 = std::chrono::steady_clock::now();
  raw.ReadAll();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, 200ms);
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
  EXPECT_TRUE(Eventually([&] { return server_->stats().connections_open == 0; }));
}

TEST_F(ServerTlsTest, ClientThatDoesNotTrustTheCaFailsVerification) {
  StartServer();
  TestPki other("some other CA");
  TlsClient c(port_, other.ca_file());
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.error().find("verify"), std::string::npos) << c.error();
  EXPECT_TRUE(Eventually([&] { return server_->stats().tls_handshake_failures == 1; }));
  EXPECT_EQ(ServedSerial(), 1001);
}

TEST_F(ServerTlsTest, StartFailsNamingTheFileThatDoesNotLoad) {
  auto start_error = [&](TlsFiles files) {
    ServerOptions o;
    o.tls = std::move(files);
    Server s(o, Router{});
    const Status st = s.Start();
    EXPECT_FALSE(st.ok());
    return st.message();
  };
  const std::string missing = pki_.Path("missing.pem");
  EXPECT_NE(start_error({missing, files_.key_file}).find(missing), std::string::npos);
  const std::string junk = pki_.Write("junk.pem", "not a certificate\n");
  EXPECT_NE(start_error({junk, files_.key_file}).find(junk), std::string::npos);
  // A key file holding a certificate is no key.
  EXPECT_NE(start_error({files_.cert_file, files_.cert_file}).find("no PEM private key"), std::string::npos);
  const TlsFiles other = pki_.Issue("other", 7);
  const std::string mismatch = start_error({files_.cert_file, other.key_file});
  EXPECT_NE(mismatch.find(other.key_file), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("does not match"), std::string::npos) << mismatch;
  const TlsFiles locked = pki_.Issue("locked", 8, "localhost", /*encrypt_key=*/true);
  const std::string locked_error = start_error(locked);
  EXPECT_NE(locked_error.find("encrypted"), std::string::npos) << locked_error;
  EXPECT_NE(start_error({files_.cert_file, ""}).find("without its key"), std::string::npos);
  EXPECT_TRUE(CheckTlsFiles(files_).ok());
  EXPECT_FALSE(CheckTlsFiles({missing, files_.key_file}).ok());
}

TEST_F(ServerTlsTest, ReloadRefusesBadFilesAndKeepsTheCurrentCertificate) {
  StartServer();
  const std::string junk = pki_.Write("junk.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  const Status bad = server_->ReloadTls({junk, files_.key_file});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find(junk), std::string::npos) << bad.message();
  const TlsFiles other = pki_.Issue("other", 7);
  EXPECT_FALSE(server_->ReloadTls({files_.cert_file, other.key_file}).ok());
  EXPECT_FALSE(server_->ReloadTls({pki_.Path("gone.pem"), pki_.Path("gone.key")}).ok());
  EXPECT_EQ(ServedSerial(), 1001);
  // The files in force are still those of the last good load.
  EXPECT_TRUE(server_->ReloadTls().ok());
  EXPECT_EQ(ServedSerial(), 1001);
}

TEST_F(ServerTlsTest, ReloadServesTheNewCertificateToNewConnectionsOnly) {
  StartServer();
  TlsClient old_conn(port_, pki_.ca_file());
  ASSERT_TRUE(old_conn.ok()) << old_conn.error();
  ASSERT_TRUE(old_conn.Send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\none"));
  ASSERT_NE(old_conn.ReadUntil("one").find("200 OK"), std::string::npos);

  ASSERT_TRUE(server_->ReloadTls(pki_.Issue("next", 2002)).ok());
  EXPECT_EQ(ServedSerial(), 2002);
  // The same files rewritten (a renewal in place), then reloaded without arguments.
  pki_.Issue("next", 3003);
  ASSERT_TRUE(server_->ReloadTls().ok());
  EXPECT_EQ(ServedSerial(), 3003);

  // The connection opened before carries on with its certificate.
  ASSERT_TRUE(old_conn.Send("POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\ntwo"));
  EXPECT_NE(old_conn.ReadUntil("two").find("200 OK"), std::string::npos);
  EXPECT_EQ(old_conn.peer_serial(), 1001);
}

TEST_F(ServerTlsTest, StreamsOverTlsAndReportsClientsThatLeave) {
  StartServer();
  for (const bool orderly : {true, false}) {
    TlsClient c(port_, pki_.ca_file());
    ASSERT_TRUE(c.ok()) << c.error();
    ASSERT_TRUE(c.Send("POST /park HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n"));
    auto w = WaitParked();
    ASSERT_NE(w, nullptr);
    std::atomic<bool> cancelled{false};
    w->OnCancel([&] { cancelled = true; });
    ASSERT_TRUE(w->SendSse("first event"));
    EXPECT_NE(c.ReadUntil("first event").find("text/event-stream"), std::string::npos);
    c.Close(/*notify=*/orderly);  // close_notify then FIN, or a bare FIN
    EXPECT_TRUE(Eventually([&] { return cancelled.load(); })) << (orderly ? "orderly" : "abrupt") << " close";
    EXPECT_TRUE(w->cancelled());
    std::lock_guard<std::mutex> lock(mu_);
    parked_.clear();
  }
}

TEST_F(ServerTlsTest, SighupRunsTheHangupCallbackOnTheControllingThread) {
  StartServer();
  std::atomic<int> hangups{0};
  std::atomic<bool> reloaded_ok{false};
  // Until RunUntilSignal has installed its handler a SIGHUP would end the
  // process: ignore it meanwhile, and send until one is seen.
  std::signal(SIGHUP, SIG_IGN);
  std::thread runner([&] {
    server_->RunUntilSignal(1s, [&] {
      reloaded_ok = server_->ReloadTls().ok();
      ++hangups;
    });
  });
  pki_.Issue("server", 4004);  // renewed in place
  EXPECT_TRUE(Eventually([&] {
    if (hangups > 0) return true;
    ::kill(::getpid(), SIGHUP);
    return false;
  }));
  EXPECT_TRUE(reloaded_ok);
  EXPECT_EQ(ServedSerial(), 4004);
  server_->Shutdown(1s);
  runner.join();
  std::signal(SIGHUP, SIG_DFL);
}

}  // namespace
}  // namespace pagoda::http
