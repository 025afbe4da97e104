// Server::Impl, private to src/http: the listener, the I/O threads, the
// registry of open connections (sessions, session.h), the counters and the
// TLS context. server.cc runs it; the sessions read its options and counters.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/asio.h"
#include "http/exchange.h"
#include "http/server.h"
#include "http/tls_context.h"

namespace pagoda::http {

class Server::Impl {
 public:
  Impl(ServerOptions options, Router router) : options_(std::move(options)), router_(std::move(router)) {}
  ~Impl() { Shutdown(std::chrono::milliseconds(0)); }

  Status Start();
  void Shutdown(std::chrono::milliseconds deadline);
  void RunUntilSignal(std::chrono::milliseconds deadline, std::function<void()> on_hangup);
  Status ReloadTls(const TlsFiles* files);  // nullptr: the files loaded last

  // Called by ~Session (any I/O thread).
  void SessionClosed(uint64_t id);

  const ServerOptions options_;
  const Router router_;
  internal::ServerTlsContext tls_;  // loaded by Start when options_.tls is set
  std::shared_ptr<internal::Liveness> liveness_ = std::make_shared<internal::Liveness>();
  std::atomic<bool> draining_{false};
  std::atomic<uint16_t> port_{0};

  std::atomic<uint64_t> connections_accepted_{0}, connections_open_{0}, requests_{0}, exchanges_active_{0},
      bad_requests_{0}, tls_handshake_failures_{0};
  std::shared_ptr<std::atomic<int64_t>> queued_bytes_ = std::make_shared<std::atomic<int64_t>>(0);

 private:
  internal::asio::awaitable<void> Accept();

  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, std::weak_ptr<internal::SessionHandle>> sessions_;  // guarded by mu_
  bool started_ = false;                                                          // guarded by mu_
  bool stopped_ = false;                                                          // guarded by mu_
  bool stop_requested_ = false;   // guarded by mu_ (RunUntilSignal)
  int hangups_pending_ = 0;       // guarded by mu_ (RunUntilSignal)
  std::vector<std::thread> threads_;

  // Declared last: destroyed first, while everything its handlers touch lives.
  std::unique_ptr<internal::asio::io_context> ioc_;
  std::unique_ptr<internal::tcp::acceptor> acceptor_;
  std::unique_ptr<internal::asio::executor_work_guard<internal::asio::io_context::executor_type>> work_;
};

}  // namespace pagoda::http
