// Server: HTTP/1.1 on Boost.Beast with C++20 coroutines on a small pool of
// I/O threads (no thread per connection). Keep-alive, SSE streaming through
// ResponseWriter, body/header/time limits, and graceful shutdown. With
// ServerOptions::tls set it speaks https only (TLS 1.2+ over OpenSSL, HTTP/1.1
// only), and ReloadTls() swaps the certificate for new connections.
// Thread safety: Start/Shutdown/RunUntilSignal from one controlling thread
// (never an I/O thread); stats(), port(), tls() and ReloadTls() from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "http/router.h"
#include "http/tls_files.h"

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
  // https: the certificate and key (both PEM); unset: plain HTTP. The TLS
  // handshake counts as part of the first request (request_timeout), and
  // plain HTTP sent to the TLS port gets a plain 400 and a close.
  TlsFiles tls;
};

struct ServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;
  uint64_t requests = 0;           // requests read completely
  uint64_t exchanges_active = 0;   // requests whose response is not complete
  uint64_t bad_requests = 0;       // malformed / over limit (plain HTTP to the TLS port among them)
  uint64_t tls_handshake_failures = 0;  // failed or timed out (a client refusing the certificate, plain HTTP, ...)
  uint64_t queued_bytes = 0;       // response bytes handlers queued that are not yet written, all connections
};

class Server {
 public:
  Server(ServerOptions options, Router router);
  ~Server();  // Shutdown(0) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Loads the TLS certificate and key (when set), binds, listens and starts
  // the I/O threads. Errors: the certificate or key does not load (naming
  // the file), the address or port cannot be bound.
  Status Start();
  uint16_t port() const;
  bool tls() const;  // ServerOptions::tls was set

  // https only: loads the certificate and key again, from `files` or (without
  // an argument) from the files loaded last, for the connections accepted
  // from then on; open connections keep theirs. On error (a plain HTTP
  // server, files that do not load) the current certificate stays. Logs the
  // outcome either way.
  Status ReloadTls();
  Status ReloadTls(const TlsFiles& files);

  // Graceful shutdown: stop accepting; close idle keep-alive connections;
  // let responses in flight complete (their connections then close); at
  // `deadline` cancel the rest (their OnCancel callbacks run) and close them.
  // Blocks until the I/O threads have exited. Idempotent.
  void Shutdown(std::chrono::milliseconds deadline);

  // Blocks until SIGINT or SIGTERM (or Shutdown from another thread), then
  // Shutdown(deadline). With `on_hangup`, SIGHUP is handled too: each one
  // runs on_hangup on the calling thread (e.g. a ReloadTls); without it
  // SIGHUP keeps whatever disposition it had.
  void RunUntilSignal(std::chrono::milliseconds deadline, std::function<void()> on_hangup = nullptr);

  ServerStats stats() const;

  class Impl;  // opaque (server_impl.h); public so that the sessions there can name it

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace pagoda::http
