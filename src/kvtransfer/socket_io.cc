#include "kvtransfer/socket_io.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

namespace pagoda::kvtransfer {
namespace {

using Clock = std::chrono::steady_clock;

int MillisUntil(Clock::time_point t) {
  if (t == Clock::time_point::max()) return -1;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

// Waits for `events` on fd until `deadline`: Ok, DeadlineExceeded, or the poll error.
Status Wait(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, MillisUntil(deadline));
    if (r > 0) return Status::Ok();
    if (r == 0) return DeadlineExceeded("KV transfer: the peer stalled");
    if (errno != EINTR) return IoError(std::string("KV transfer: poll: ") + std::strerror(errno));
  }
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

}  // namespace

Result<HostPort> ParseHostPort(std::string_view s) {
  HostPort hp;
  size_t colon;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return InvalidArgument("expected host:port, got '" + std::string(s) + "'");
    }
    hp.host = std::string(s.substr(1, close - 1));
    colon = close + 1;
  } else {
    colon = s.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return InvalidArgument("expected host:port, got '" + std::string(s) + "'");
    hp.host = std::string(s.substr(0, colon));
  }
  const std::string_view port = s.substr(colon + 1);
  unsigned v = 0;
  const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc() || p != port.data() + port.size() || v > 65535) {
    return InvalidArgument("bad port in '" + std::string(s) + "'");
  }
  hp.port = static_cast<uint16_t>(v);
  return hp;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::Shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

namespace {

Result<addrinfo*> Resolve(const HostPort& hp, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(hp.port);
  const int rc = ::getaddrinfo(hp.host.empty() ? nullptr : hp.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return IoError("KV transfer: cannot resolve '" + hp.host + "': " + ::gai_strerror(rc));
  return res;
}

}  // namespace

Result<Socket> ConnectTcp(const HostPort& to, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  PAGODA_ASSIGN_OR_RETURN(addrinfo * res, Resolve(to, false));
  Status last = IoError("KV transfer: no address for '" + to.host + "'");
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    SetNonBlocking(s.fd());
    int rc = ::connect(s.fd(), a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      Status w = Wait(s.fd(), POLLOUT, deadline);
      if (!w.ok()) {
        last = IoError("KV transfer: connecting to " + to.host + ":" + std::to_string(to.port) + " timed out");
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last = IoError("KV transfer: connecting to " + to.host + ":" + std::to_string(to.port) + ": " +
                         std::strerror(errno));
      continue;
    }
    const int one = 1;
    ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::freeaddrinfo(res);
    return s;
  }
  ::freeaddrinfo(res);
  return last;
}

Result<Socket> ListenTcp(const HostPort& at, int backlog) {
  PAGODA_ASSIGN_OR_RETURN(addrinfo * res, Resolve(at, true));
  Status last = IoError("KV transfer: no address to listen on for '" + at.host + "'");
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    const int one = 1;
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.fd(), backlog) != 0) {
      last = IoError("KV transfer: cannot listen on " + at.host + ":" + std::to_string(at.port) + ": " +
                         std::strerror(errno));
      continue;
    }
    ::freeaddrinfo(res);
    return s;
  }
  ::freeaddrinfo(res);
  return last;
}

uint16_t LocalPort(const Socket& s) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

Status WriteAll(const Socket& s, const void* data, size_t n, Clock::time_point deadline, bool* peer_spoke) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::send(s.fd(), p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (peer_spoke == nullptr) {
        PAGODA_RETURN_IF_ERROR(Wait(s.fd(), POLLOUT, deadline));
        continue;
      }
      PAGODA_RETURN_IF_ERROR(Wait(s.fd(), POLLOUT | POLLIN, deadline));
      pollfd p{s.fd(), POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) {
        *peer_spoke = true;
        return FailedPrecondition("KV transfer: the peer answered before the stream ended");
      }
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    return IoError(std::string("KV transfer: send: ") + std::strerror(errno));
  }
  return Status::Ok();
}

Status SocketReader::ReadExact(void* dst, size_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const ssize_t r = ::recv(s_.fd(), p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return InvalidArgument("KV transfer: the stream is truncated (the peer closed)");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return IoError(std::string("KV transfer: recv: ") + std::strerror(errno));
    const Clock::time_point idle_end = Clock::now() + idle_;
    PAGODA_RETURN_IF_ERROR(Wait(s_.fd(), POLLIN, std::min(idle_end, deadline_)));
  }
  return Status::Ok();
}

}  // namespace pagoda::kvtransfer
