// Each connection is a Session<Stream>: one coroutine on its own strand that
// reads a request, hands it to the router with a ResponseWriter, then pumps
// what the writer queues (from any thread) onto the stream. While a response
// is pending, a second coroutine watches the socket for the client going
// away, to report it as cancellation. Stream is beast::tcp_stream or a TLS
// stream over one; what differs (the handshake, the close, telling a
// departed TLS client from a pipelined request) is behind `if constexpr`.
#include "http/session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <type_traits>

#include "base/log.h"
#include "http/server_impl.h"
#include "http/stall_watchdog.h"

namespace pagoda::http::internal {
namespace {

using namespace std::chrono_literals;

// How long a TLS close waits for the client's close_notify.
constexpr std::chrono::milliseconds kTlsCloseWait = 1s;
// While unread bytes sit on a TLS connection with a response pending, how
// often the watcher looks for the client's FIN behind them.
constexpr std::chrono::milliseconds kTlsWatchPoll = 100ms;

// Whether the peer has closed or reset the connection. POLLRDHUP sees a FIN
// even behind unread bytes.
bool PeerGone(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) return true;
  char c;
  const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// OpenSSL recognises an HTTP request where a ClientHello should be.
bool IsPlainHttp(const beast::error_code& ec) {
  if (ec.category() != asio::error::get_ssl_category()) return false;
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
  return reason == SSL_R_HTTP_REQUEST || reason == SSL_R_HTTPS_PROXY_REQUEST;
}

bool IsCloseError(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
         ec == asio::error::connection_reset || ec == asio::error::eof || ec == asio::error::bad_descriptor ||
         ec == ssl::error::stream_truncated || ec.category() == asio::error::get_ssl_category();
}

bhttp::response<bhttp::string_body> ToBeast(const Response& r, bool keep_alive, unsigned version) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(r.status), version};
  res.set(bhttp::field::server, "pagoda");
  res.set(bhttp::field::content_type, r.content_type);
  for (const auto& [k, v] : r.headers.fields()) res.set(k, v);
  res.body() = r.body;
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

// Lingering close: reads and drops up to `limit` bytes for up to a second,
// so that closing with the client's unread bytes does not reset the
// connection before the client has read our answer.
template <class ReadStream>
asio::awaitable<void> DrainBriefly(ReadStream& s, beast::tcp_stream& tcp, size_t limit) {
  beast::error_code ec;
  tcp.expires_after(1s);
  char buf[16384];
  size_t total = 0;
  while (total < limit) {
    const size_t n = co_await s.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    total += n;
  }
}

template <class Stream>
constexpr bool kIsTls = std::is_same_v<Stream, TlsStream>;

template <class Stream>
class Session final : public SessionHandle, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = kIsTls<Stream>;

  Session(Server::Impl* server, tcp::socket socket, uint64_t id)
    requires(!kTls)
      : server_(server),
        stream_(std::move(socket)),
        wake_(stream_.get_executor()),
        write_watch_(stream_.get_executor()),
        id_(id) {}
  Session(Server::Impl* server, tcp::socket socket, uint64_t id, std::shared_ptr<ssl::context> tls)
    requires(kTls)
      : server_(server),
        tls_(std::move(tls)),
        stream_(beast::tcp_stream(std::move(socket)), *tls_),
        wake_(stream_.get_executor()),
        write_watch_(stream_.get_executor()),
        id_(id) {}
  ~Session() override { server_->SessionClosed(id_); }

  void Start() override {
    asio::co_spawn(stream_.get_executor(), Run(this->shared_from_this()), asio::detached);
  }
  void Notify() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->wake_.cancel(); });
  }
  void CloseIfIdle() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->idle_) self->Tcp().close();
    });
  }
  void ForceClose() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->exchange_) self->exchange_->Cancel();
      self->wake_.cancel();
      self->Tcp().close();
    });
  }

 private:
  enum class ReadOutcome { kRequest, kClose };

  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }
  asio::awaitable<void> Run(std::shared_ptr<Session> self);
  asio::awaitable<bool> Handshake();
  asio::awaitable<void> Close();
  asio::awaitable<ReadOutcome> ReadRequest(Request* out, bool* keep_alive, unsigned* version);
  asio::awaitable<bool> Serve(std::shared_ptr<Session> self, Request request, bool keep_alive, unsigned version);
  asio::awaitable<bool> Pump(Exchange& ex, bool keep_alive, unsigned version);
  asio::awaitable<void> Watch(std::shared_ptr<Session> self, std::shared_ptr<Exchange> ex);
  asio::awaitable<bool> WriteResponse(const Response& r, bool keep_alive, unsigned version);
  asio::awaitable<void> RejectAndClose(const Response& r, unsigned version);

  Server::Impl* server_;
  std::shared_ptr<ssl::context> tls_;  // TLS only; outlives stream_ (declared first)
  Stream stream_;
  asio::steady_timer wake_;
  // Bounds each write of a stream's events by write_timeout (one timer per
  // stream rather than one per event); strand only.
  StallWatchdog write_watch_;
  std::deque<OutItem> items_;  // what Pump took from the exchange; strand only
  beast::flat_buffer buffer_;
  std::shared_ptr<Exchange> exchange_;  // the pending exchange, strand only
  bool idle_ = false;                   // strand only: waiting for a request's first byte (or the handshake)
  bool handshake_done_ = false;         // strand only (TLS)
  uint64_t id_;
};

template <class Stream>
asio::awaitable<void> Session<Stream>::Run(std::shared_ptr<Session> self) {
  if constexpr (kTls) {
    if (!co_await Handshake()) {
      Tcp().close();
      co_return;
    }
  }
  for (;;) {
    if (server_->draining_) break;
    Request request;
    bool keep_alive = false;
    unsigned version = 11;
    if (co_await ReadRequest(&request, &keep_alive, &version) != ReadOutcome::kRequest) break;
    if (!co_await Serve(self, std::move(request), keep_alive, version)) break;
  }
  co_await Close();
}

// The handshake is the start of the first request: it must complete within
// request_timeout (slowloris). Plain HTTP gets a plain-text 400.
template <class Stream>
asio::awaitable<bool> Session<Stream>::Handshake() {
  beast::error_code ec;
  if constexpr (kTls) {
    idle_ = true;  // nothing to lose when draining closes it
    Tcp().expires_after(server_->options_.request_timeout);
    co_await stream_.async_handshake(ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
    idle_ = false;
    if (!ec && !server_->draining_) {
      handshake_done_ = true;
      co_return true;
    }
    if (!ec) co_return false;
    ++server_->tls_handshake_failures_;
    if (IsPlainHttp(ec)) {
      ++server_->bad_requests_;
      const auto res = ToBeast(ErrorResponse(400, "This port speaks HTTPS: the request was sent as plain HTTP; "
                                                  "use an https:// URL.",
                                             "plain_http_to_https_port"),
                               false, 11);
      Tcp().expires_after(server_->options_.write_timeout);
      co_await bhttp::async_write(Tcp(), res, asio::redirect_error(asio::use_awaitable, ec));
      Tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
      co_await DrainBriefly(Tcp(), Tcp(), size_t{1} << 20);
    } else {
      // Scanners and clients that refuse the certificate land here: not worth more than debug.
      PAGODA_LOG(Debug) << "http: TLS handshake failed: " << ec.message();
    }
  }
  co_return false;
}

template <class Stream>
asio::awaitable<void> Session<Stream>::Close() {
  beast::error_code ec;
  if constexpr (kTls) {
    // close_notify, then a short wait for the client's.
    if (handshake_done_ && Tcp().socket().is_open()) {
      Tcp().expires_after(std::min(kTlsCloseWait, server_->options_.write_timeout));
      co_await stream_.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    }
  }
  Tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
  Tcp().close();
}

template <class Stream>
asio::awaitable<typename Session<Stream>::ReadOutcome> Session<Stream>::ReadRequest(Request* out, bool* keep_alive,
                                                                                    unsigned* version) {
  const ServerOptions& opt = server_->options_;
  beast::error_code ec;
  if (buffer_.size() == 0) {
    idle_ = true;
    Tcp().expires_after(opt.idle_timeout);
    const size_t n = co_await stream_.async_read_some(buffer_.prepare(4096), asio::redirect_error(asio::use_awaitable, ec));
    idle_ = false;
    if (ec) co_return ReadOutcome::kClose;  // EOF, idle timeout, closed while draining
    buffer_.commit(n);
  }
  Tcp().expires_after(opt.request_timeout);
  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<uint32_t>(opt.max_header_bytes));
  parser.body_limit(opt.max_body_bytes);
  co_await bhttp::async_read_header(stream_, buffer_, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) {
    const auto expect = parser.get()[bhttp::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, parser.get().version()};
      co_await bhttp::async_write(stream_, cont, asio::redirect_error(asio::use_awaitable, ec));
    }
  }
  if (!ec) co_await bhttp::async_read(stream_, buffer_, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    if (IsCloseError(ec)) co_return ReadOutcome::kClose;
    ++server_->bad_requests_;
    const unsigned v = parser.is_header_done() ? parser.get().version() : 11;
    if (ec == bhttp::error::body_limit) {
      co_await RejectAndClose(ErrorResponse(413, "Request body exceeds the limit of " +
                                                     std::to_string(opt.max_body_bytes) + " bytes.",
                                            "request_too_large"),
                              v);
    } else if (ec == bhttp::error::header_limit) {
      co_await RejectAndClose(ErrorResponse(431, "Request header fields too large.", "header_too_large"), v);
    } else {
      co_await RejectAndClose(ErrorResponse(400, "Malformed HTTP request: " + ec.message() + ".", "bad_request"), v);
    }
    co_return ReadOutcome::kClose;
  }
  ++server_->requests_;
  auto& req = parser.get();
  *keep_alive = req.keep_alive();
  *version = req.version();
  out->method = std::string(req.method_string());
  out->target = std::string(req.target());
  const size_t q = out->target.find('?');
  out->path = out->target.substr(0, q);
  if (q != std::string::npos) out->query = out->target.substr(q + 1);
  for (const auto& f : req) out->headers.Add(std::string(f.name_string()), std::string(f.value()));
  out->body = std::move(req.body());
  const auto ep = Tcp().socket().remote_endpoint(ec);
  if (!ec) out->remote_address = ep.address().to_string() + ":" + std::to_string(ep.port());
  out->connection_id = id_;
  out->secure = kTls;
  co_return ReadOutcome::kRequest;
}

template <class Stream>
asio::awaitable<bool> Session<Stream>::Serve(std::shared_ptr<Session> self, Request request, bool keep_alive,
                                             unsigned version) {
  if (server_->draining_) {
    co_await WriteResponse(ErrorResponse(503, "The server is shutting down.", "shutting_down"), false, version);
    co_return false;
  }
  ++server_->exchanges_active_;
  auto ex = std::make_shared<Exchange>();
  ex->session = self;
  ex->liveness = server_->liveness_;
  ex->server_queued = server_->queued_bytes_;
  exchange_ = ex;
  {
    auto writer = MakeResponseWriter(ex);
    try {
      server_->router_.Dispatch(request, writer);
    } catch (const std::exception& e) {
      PAGODA_LOG(Error) << "http: handler for " << request.method << " " << request.path << " threw: " << e.what();
      writer->Respond(ErrorResponse(500, "Internal server error.", ""));
    }
  }
  asio::co_spawn(stream_.get_executor(), Watch(self, ex), asio::detached);
  const bool ok = co_await Pump(*ex, keep_alive, version);
  ex->complete = true;
  beast::error_code ec;
  Tcp().socket().cancel(ec);  // ends the watcher's wait
  exchange_.reset();
  --server_->exchanges_active_;
  co_return ok && keep_alive && !server_->draining_;
}

template <class Stream>
asio::awaitable<bool> Session<Stream>::Pump(Exchange& ex, bool keep_alive, unsigned version) {
  const ServerOptions& opt = server_->options_;
  beast::error_code ec;
  bool streaming = false;
  Tcp().expires_never();
  struct StopWatch {
    StallWatchdog& w;
    ~StopWatch() { w.Stop(); }
  } stop_watch{write_watch_};
  std::deque<OutItem>& items = items_;
  for (;;) {
    items.clear();
    bool abandoned;
    {
      std::lock_guard<std::mutex> lock(ex.mu);
      items.swap(ex.queue);
      ex.wake_pending = false;
      abandoned = ex.abandoned;
    }
    if (ex.cancelled) co_return false;
    if (items.empty()) {
      if (abandoned) {
        ex.complete = true;  // nothing left to cancel: the handler is gone
        if (!streaming) {
          co_return co_await WriteResponse(ErrorResponse(500, "The handler produced no response.", ""), keep_alive,
                                           version);
        }
        Tcp().expires_after(opt.write_timeout);
        co_await asio::async_write(stream_, bhttp::make_chunk_last(), asio::redirect_error(asio::use_awaitable, ec));
        co_return !ec;
      }
      wake_.expires_at(asio::steady_timer::time_point::max());
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      OutItem& item = items[i];
      switch (item.kind) {
        case OutItem::Kind::kFull:
          // The handler has finished: a disconnect from here on cancels nothing
          // (and the watcher may see the client's close before this write's
          // completion runs).
          ex.complete = true;
          co_return co_await WriteResponse(item.response, keep_alive, version);
        case OutItem::Kind::kSseBegin: {
          bhttp::response<bhttp::empty_body> res{bhttp::status::ok, version};
          res.set(bhttp::field::server, "pagoda");
          res.set(bhttp::field::content_type, "text/event-stream");
          res.set(bhttp::field::cache_control, "no-cache");
          res.set("X-Accel-Buffering", "no");
          for (const auto& [k, v] : item.headers.fields()) res.set(k, v);
          res.keep_alive(keep_alive && !server_->draining_);
          res.chunked(true);
          bhttp::response_serializer<bhttp::empty_body> sr{res};
          Tcp().expires_after(opt.write_timeout);
          co_await bhttp::async_write_header(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
          Tcp().expires_never();
          streaming = true;
          write_watch_.Start(this->weak_from_this(), opt.write_timeout, [this] { Tcp().close(); });
          break;
        }
        case OutItem::Kind::kSseData: {
          // The events queued so far, as one chunk (writers append to one item).
          std::string chunk = std::move(item.data);
          while (i + 1 < items.size() && items[i + 1].kind == OutItem::Kind::kSseData) {
            chunk += items[++i].data;
          }
          write_watch_.Begin(std::chrono::steady_clock::now() + opt.write_timeout);
          co_await asio::async_write(stream_, bhttp::make_chunk(asio::buffer(chunk)),
                                     asio::redirect_error(asio::use_awaitable, ec));
          write_watch_.End();
          std::lock_guard<std::mutex> lock(ex.mu);
          ex.Written(chunk.size(), &chunk);
          break;
        }
        case OutItem::Kind::kSseEnd:
          ex.complete = true;  // as for kFull
          Tcp().expires_after(opt.write_timeout);
          co_await asio::async_write(stream_, bhttp::make_chunk_last(),
                                     asio::redirect_error(asio::use_awaitable, ec));
          co_return !ec;
      }
      if (ec) {
        ex.Cancel();  // the client is gone or stalled past write_timeout
        co_return false;
      }
    }
  }
}

// Watches the raw socket (never reading it) for the client going away while
// the response is pending. Readable with bytes and no FIN is a pipelined
// request on plain HTTP; over TLS it may also be the client's close_notify
// with the FIN still to come (TLS 1.3 encrypts alerts, so the two cannot be
// told apart without reading), so the watcher keeps looking for the FIN.
template <class Stream>
asio::awaitable<void> Session<Stream>::Watch(std::shared_ptr<Session> self, std::shared_ptr<Exchange> ex) {
  beast::error_code ec;
  auto& socket = Tcp().socket();
  for (;;) {
    co_await socket.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
    if (ex->complete || ec == asio::error::operation_aborted) co_return;
    if (ec || PeerGone(socket.native_handle())) {
      ex->Cancel();
      wake_.cancel();
      co_return;
    }
    if constexpr (!kTls) {
      co_return;
    } else {
      asio::steady_timer pause(stream_.get_executor(), kTlsWatchPoll);
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ex->complete || !socket.is_open()) co_return;
    }
  }
}

template <class Stream>
asio::awaitable<bool> Session<Stream>::WriteResponse(const Response& r, bool keep_alive, unsigned version) {
  const auto res = ToBeast(r, keep_alive && !server_->draining_, version);
  beast::error_code ec;
  Tcp().expires_after(server_->options_.write_timeout);
  co_await bhttp::async_write(stream_, res, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

template <class Stream>
asio::awaitable<void> Session<Stream>::RejectAndClose(const Response& r, unsigned version) {
  if (!co_await WriteResponse(r, false, version)) co_return;
  // The client may still be sending the body we refused. Clients such as
  // undici read the answer only after writing the whole body, so the bound
  // covers a body of twice the limit (a refused 9 MiB body against an 8 MiB
  // limit must not end in a reset). Over TLS the bytes are read through the
  // TLS stream (a TCP half-close would cut its close_notify off).
  beast::error_code ec;
  if constexpr (!kTls) Tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
  const size_t limit = std::max<size_t>(size_t{4} << 20, 2 * static_cast<size_t>(server_->options_.max_body_bytes));
  co_await DrainBriefly(stream_, Tcp(), limit);
}

}  // namespace

std::shared_ptr<SessionHandle> MakeSession(Server::Impl* server, tcp::socket socket, uint64_t id,
                                           std::shared_ptr<ssl::context> tls) {
  if (tls) return std::make_shared<Session<TlsStream>>(server, std::move(socket), id, std::move(tls));
  return std::make_shared<Session<beast::tcp_stream>>(server, std::move(socket), id);
}

}  // namespace pagoda::http::internal
