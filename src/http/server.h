// Server: HTTP/1.1 on Boost.Beast with C++20 coroutines on a small pool of
// I/O threads (no thread per connection). Keep-alive, SSE streaming through
// ResponseWriter, body/header/time limits, and graceful shutdown.
// Thread safety: Start/Shutdown/RunUntilSignal from one controlling thread
// (never an I/O thread); stats() and port() from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "http/router.h"

namespace pagoda::http {

struct ServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;  // 0: an ephemeral port (see Server::port())
  int io_threads = 2;
  size_t max_body_bytes = 8u << 20;     // larger: 413
  size_t max_header_bytes = 16u << 10;  // larger: 431
  // Slowloris limits: a request's header and body must arrive within
  // request_timeout of its first byte; a keep-alive connection may sit idle
  // between requests for idle_timeout; a write may stall for write_timeout.
  std::chrono::milliseconds request_timeout{30'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds write_timeout{60'000};
};

struct ServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;
  uint64_t requests = 0;           // requests read completely
  uint64_t exchanges_active = 0;   // requests whose response is not complete
  uint64_t bad_requests = 0;       // malformed / over limit
  uint64_t queued_bytes = 0;       // response bytes handlers queued that are not yet written, all connections
};

class Server {
 public:
  Server(ServerOptions options, Router router);
  ~Server();  // Shutdown(0) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O threads. Error: the address or port
  // cannot be bound.
  Status Start();
  uint16_t port() const;

  // Graceful shutdown: stop accepting; close idle keep-alive connections;
  // let responses in flight complete (their connections then close); at
  // `deadline` cancel the rest (their OnCancel callbacks run) and close them.
  // Blocks until the I/O threads have exited. Idempotent.
  void Shutdown(std::chrono::milliseconds deadline);

  // Blocks until SIGINT or SIGTERM (or Shutdown from another thread), then
  // Shutdown(deadline).
  void RunUntilSignal(std::chrono::milliseconds deadline);

  ServerStats stats() const;

 private:
  friend class Session;  // server.cc
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace pagoda::http
