// UpstreamClient: an asynchronous HTTP/1.1 client for proxies (the gateway's
// calls to its replicas and external upstreams). Requests run as coroutines on
// the client's own small pool of I/O threads, so a thousand concurrent
// streams need no thousand threads; keep-alive connections are pooled per
// host:port. Each call has connect, first-byte and idle timeouts and an
// optional overall deadline, and can be cancelled from any thread (the
// connection is then closed at once, never returned to the pool).
// https: TLS 1.2+ over OpenSSL with SNI, the peer's certificate verified
// against the system store (or the request's ca_file) and the host name
// checked; there is no way to turn verification off. TLS connections are
// pooled like plain ones (per scheme, host:port and CA file).
// Thread safety: Start() and UpstreamCall::Cancel() from any thread. The
// events of one call run one at a time on an I/O thread of the client; they
// must not block. No Boost type appears here.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "http/message.h"

namespace pagoda::http {

struct UpstreamClientOptions {
  int io_threads = 2;
  size_t max_idle_per_host = 64;  // pooled keep-alive connections per host:port
};

struct UpstreamRequest {
  std::string host;
  uint16_t port = 0;
  bool tls = false;     // https: TLS with certificate and host name verification
  std::string ca_file;  // tls: PEM file of the CAs to trust instead of the system store ("" = system)
  std::string method = "GET";
  std::string target = "/";
  Headers headers;  // sent as given (plus Host, and Content-Length for a body)
  std::string body;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds first_byte_timeout{60'000};  // request written -> response header
  std::chrono::milliseconds idle_timeout{30'000};        // between body reads
  // Ends the call (kDeadline) wherever it is; max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

enum class UpstreamError {
  kNone,
  kConnect,    // resolve / connect failed or timed out (nothing was sent)
  kTls,        // TLS handshake or certificate verification failed, or the CA file is unusable (nothing was sent)
  kTimeout,    // first byte or idle timeout
  kDeadline,   // the request's overall deadline
  kProtocol,   // not HTTP, or a malformed response
  kClosed,     // the upstream closed the connection before the response was complete
  kCancelled,  // Cancel() or the client shutting down
};

const char* UpstreamErrorName(UpstreamError e);

struct UpstreamOutcome {
  UpstreamError error = UpstreamError::kNone;
  bool head_received = false;  // on_head ran (the response had begun)
  std::string message;         // for logs; never contains bodies
};

struct UpstreamResponseHead {
  int status = 0;
  Headers headers;
};

struct UpstreamEvents {
  std::function<void(const UpstreamResponseHead& head)> on_head;  // once, before any body
  std::function<void(std::string_view bytes)> on_body;           // body bytes as they arrive (de-chunked)
  std::function<void(const UpstreamOutcome& outcome)> on_done;    // exactly once, last
  // Back-pressure: while this returns true (the consumer holds more than it
  // wants, e.g. a slow client), the call stops reading the body, so the
  // upstream's TCP window fills and it slows down; checked every few
  // milliseconds. The idle timeout does not run while paused; the deadline does.
  std::function<bool()> paused;
};

class UpstreamCall {
 public:
  virtual ~UpstreamCall() = default;
  // Closes the connection and ends the call with kCancelled (unless it has
  // already ended). Idempotent; any thread.
  virtual void Cancel() = 0;
};

class UpstreamClient {
 public:
  explicit UpstreamClient(UpstreamClientOptions options = {});
  // Cancels the calls in flight (their on_done runs with kCancelled) and joins
  // the I/O threads.
  ~UpstreamClient();
  UpstreamClient(const UpstreamClient&) = delete;
  UpstreamClient& operator=(const UpstreamClient&) = delete;

  std::shared_ptr<UpstreamCall> Start(UpstreamRequest request, UpstreamEvents events);

  size_t idle_connections() const;  // pooled, all hosts
  uint64_t connects() const;        // connections opened so far
  size_t calls_active() const;

  class Impl;  // opaque (upstream_client.cc); public so that the calls there can name it

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace pagoda::http
