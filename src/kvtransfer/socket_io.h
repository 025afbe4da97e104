// Blocking TCP I/O with deadlines for the KV transfer stream (POSIX sockets
// and poll: one connection per transfer, a thread on each side, so nothing
// here needs an event loop). Every wait is bounded: a stalled peer times
// out (DeadlineExceeded) instead of holding a thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "kvtransfer/transfer_protocol.h"

namespace pagoda::kvtransfer {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// "host:port" (host a name or IPv4 address, or [v6]); InvalidArgument otherwise.
Result<HostPort> ParseHostPort(std::string_view s);

// An open socket, closed on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Wakes a thread blocked on this socket (shutdown both ways).
  void Shutdown();

 private:
  int fd_ = -1;
};

// Connects within `timeout` (TCP_NODELAY set). IoError on refusal or
// timeout.
Result<Socket> ConnectTcp(const HostPort& to, std::chrono::milliseconds timeout);
// A listening socket on `at` (port 0: any free port).
Result<Socket> ListenTcp(const HostPort& at, int backlog = 16);
// The port a socket is bound to.
uint16_t LocalPort(const Socket& s);

// Writes all n bytes before `deadline` (DeadlineExceeded past it, IoError
// when the peer is gone). With `peer_spoke`, a peer that sends something
// (or closes) while a write waits for room ends it too: *peer_spoke = true
// and FailedPrecondition (a KV transfer receiver that refuses a stream
// acknowledges at once and stops reading; its acknowledgement says why).
Status WriteAll(const Socket& s, const void* data, size_t n, std::chrono::steady_clock::time_point deadline,
                bool* peer_spoke = nullptr);

// Reads with a limit on how long any one wait for bytes may take (the
// stream stalls: DeadlineExceeded) and, past `deadline`, on the whole.
class SocketReader final : public ByteReader {
 public:
  SocketReader(const Socket& s, std::chrono::milliseconds idle_timeout,
               std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max())
      : s_(s), idle_(idle_timeout), deadline_(deadline) {}
  Status ReadExact(void* dst, size_t n) override;

 private:
  const Socket& s_;
  std::chrono::milliseconds idle_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace pagoda::kvtransfer
