// Server internals. Each connection is a Session: one coroutine on its own
// strand that reads a request, hands it to the router with a ResponseWriter,
// then pumps what the writer queues (from any thread) onto the socket. While
// a response is pending, a second coroutine watches the socket for EOF to
// report client disconnects as cancellation.
#include "http/server.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "http/asio.h"

namespace pagoda::http {

using namespace internal;  // NOLINT: asio / beast aliases

namespace {

// Lets writers on foreign threads touch the io_context only while it exists.
struct Liveness {
  std::mutex mu;
  bool alive = true;
};

struct OutItem {
  enum class Kind { kFull, kSseBegin, kSseData, kSseEnd } kind;
  Response response;  // kFull
  Headers headers;    // kSseBegin
  std::string data;   // kSseData: formatted event bytes
};

std::string FormatSseEvent(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 8);
  size_t start = 0;
  for (;;) {
    const size_t nl = data.find('\n', start);
    out += "data: ";
    out.append(data.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    out += '\n';
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  out += '\n';
  return out;
}

}  // namespace

class Session;

// One request/response: shared by the session (I/O strand) and the writer
// (any thread).
struct Exchange {
  std::mutex mu;
  std::deque<OutItem> queue;  // guarded by mu
  size_t queued_bytes = 0;    // guarded by mu
  enum class Phase { kNone, kFull, kStreaming, kEnded } phase = Phase::kNone;  // guarded by mu
  bool abandoned = false;               // guarded by mu: writer dropped before completing
  std::function<void()> on_cancel;      // guarded by mu
  std::atomic<bool> cancelled{false};
  std::atomic<bool> complete{false};    // response written, or connection gone
  std::weak_ptr<Session> session;
  std::shared_ptr<Liveness> liveness;
  std::shared_ptr<std::atomic<int64_t>> server_queued;  // the server's total of queued_bytes

  ~Exchange() {
    if (server_queued) *server_queued -= static_cast<int64_t>(queued_bytes);
  }
  void Push(OutItem item) {  // mu held by the caller
    const size_t n = item.data.size() + item.response.body.size();
    queued_bytes += n;
    if (server_queued) *server_queued += static_cast<int64_t>(n);
    queue.push_back(std::move(item));
  }
  void Written(size_t n) {  // mu held by the caller
    n = std::min(n, queued_bytes);
    queued_bytes -= n;
    if (server_queued) *server_queued -= static_cast<int64_t>(n);
  }
  void Wake();
  // Marks the exchange cancelled and runs the callback once (unless complete).
  void Cancel() {
    if (complete.load()) return;
    std::function<void()> cb;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (cancelled.exchange(true)) return;
      cb = std::move(on_cancel);
      on_cancel = nullptr;
    }
    if (cb) cb();
  }
};

namespace {

class WriterImpl final : public ResponseWriter {
 public:
  explicit WriterImpl(std::shared_ptr<Exchange> ex) : ex_(std::move(ex)) {}
  ~WriterImpl() override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->phase == Exchange::Phase::kNone || ex_->phase == Exchange::Phase::kStreaming) ex_->abandoned = true;
    }
    ex_->Wake();
  }

  bool Respond(Response response) override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->phase != Exchange::Phase::kNone || ex_->cancelled) return false;
      ex_->phase = Exchange::Phase::kFull;
      ex_->Push(OutItem{OutItem::Kind::kFull, std::move(response), {}, {}});
    }
    ex_->Wake();
    return true;
  }

  bool BeginSse(Headers extra) override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->cancelled) return false;
      if (ex_->phase != Exchange::Phase::kNone) return ex_->phase == Exchange::Phase::kStreaming;
      ex_->phase = Exchange::Phase::kStreaming;
      ex_->Push(OutItem{OutItem::Kind::kSseBegin, {}, std::move(extra), {}});
    }
    ex_->Wake();
    return true;
  }

  bool SendSse(std::string_view data) override { return QueueEvent(FormatSseEvent(data)); }

  bool SendSseRaw(std::string_view event_block) override {
    std::string e(event_block);
    if (!e.empty() && e.back() != '\n') e += '\n';
    e += '\n';
    return QueueEvent(std::move(e));
  }

  void EndSse() override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->phase == Exchange::Phase::kNone) {
        ex_->Push(OutItem{OutItem::Kind::kSseBegin, {}, {}, {}});
        ex_->phase = Exchange::Phase::kStreaming;
      }
      if (ex_->phase != Exchange::Phase::kStreaming) return;
      ex_->phase = Exchange::Phase::kEnded;
      ex_->Push(OutItem{OutItem::Kind::kSseEnd, {}, {}, {}});
    }
    ex_->Wake();
  }

  void OnCancel(std::function<void()> callback) override {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (!ex_->cancelled) {
        ex_->on_cancel = std::move(callback);
        return;
      }
    }
    if (callback) callback();
  }

  bool cancelled() const override { return ex_->cancelled.load(); }

  size_t queued_bytes() const override {
    std::lock_guard<std::mutex> lock(ex_->mu);
    return ex_->queued_bytes;
  }

 private:
  bool QueueEvent(std::string event) {
    {
      std::lock_guard<std::mutex> lock(ex_->mu);
      if (ex_->cancelled) return false;
      if (ex_->phase == Exchange::Phase::kNone) {
        ex_->phase = Exchange::Phase::kStreaming;
        ex_->Push(OutItem{OutItem::Kind::kSseBegin, {}, {}, {}});
      }
      if (ex_->phase != Exchange::Phase::kStreaming) return false;
      ex_->Push(OutItem{OutItem::Kind::kSseData, {}, {}, std::move(event)});
    }
    ex_->Wake();
    return true;
  }

  std::shared_ptr<Exchange> ex_;
};

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, Router router) : options_(std::move(options)), router_(std::move(router)) {}
  ~Impl() { Shutdown(std::chrono::milliseconds(0)); }

  Status Start();
  void Shutdown(std::chrono::milliseconds deadline);
  void RunUntilSignal(std::chrono::milliseconds deadline);

  asio::awaitable<void> Accept();
  void SessionClosed(uint64_t id);

  const ServerOptions options_;
  const Router router_;
  std::shared_ptr<Liveness> liveness_ = std::make_shared<Liveness>();
  std::atomic<bool> draining_{false};
  std::atomic<uint16_t> port_{0};

  std::atomic<uint64_t> connections_accepted_{0}, connections_open_{0}, requests_{0}, exchanges_active_{0},
      bad_requests_{0};
  std::shared_ptr<std::atomic<int64_t>> queued_bytes_ = std::make_shared<std::atomic<int64_t>>(0);

  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions_;  // guarded by mu_
  bool started_ = false;                                            // guarded by mu_
  bool stopped_ = false;                                            // guarded by mu_
  bool stop_requested_ = false;                                     // guarded by mu_ (RunUntilSignal)
  std::vector<std::thread> threads_;

  // Declared last: destroyed first, while everything its handlers touch lives.
  std::unique_ptr<asio::io_context> ioc_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server::Impl* server, tcp::socket socket, uint64_t id)
      : server_(server), stream_(std::move(socket)), wake_(stream_.get_executor()), id_(id) {}
  ~Session() { server_->SessionClosed(id_); }

  asio::any_io_executor executor() { return stream_.get_executor(); }
  asio::awaitable<void> Run(std::shared_ptr<Session> self);

  // Any thread: wake the pump.
  void Notify() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->wake_.cancel(); });
  }
  // Any thread: during draining, close the connection if it waits idle.
  void CloseIfIdle() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->idle_) self->stream_.close();
    });
  }
  // Any thread: at the shutdown deadline, cancel and close.
  void ForceClose() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->exchange_) self->exchange_->Cancel();
      self->wake_.cancel();
      self->stream_.close();
    });
  }

 private:
  enum class ReadOutcome { kRequest, kClose };
  asio::awaitable<ReadOutcome> ReadRequest(Request* out, bool* keep_alive, unsigned* version);
  asio::awaitable<bool> Serve(std::shared_ptr<Session> self, Request request, bool keep_alive, unsigned version);
  asio::awaitable<bool> Pump(Exchange& ex, bool keep_alive, unsigned version);
  asio::awaitable<void> Watch(std::shared_ptr<Session> self, std::shared_ptr<Exchange> ex);
  asio::awaitable<bool> WriteResponse(const Response& r, bool keep_alive, unsigned version);
  asio::awaitable<void> RejectAndClose(const Response& r, unsigned version);

  Server::Impl* server_;
  beast::tcp_stream stream_;
  asio::steady_timer wake_;
  beast::flat_buffer buffer_;
  std::shared_ptr<Exchange> exchange_;  // the pending exchange, strand only
  bool idle_ = false;                   // strand only: waiting for a request's first byte
  uint64_t id_;
};

void Exchange::Wake() {
  std::lock_guard<std::mutex> lock(liveness->mu);
  if (!liveness->alive) return;
  if (auto s = session.lock()) s->Notify();
}

asio::awaitable<void> Session::Run(std::shared_ptr<Session> self) {
  for (;;) {
    if (server_->draining_) break;
    Request request;
    bool keep_alive = false;
    unsigned version = 11;
    if (co_await ReadRequest(&request, &keep_alive, &version) != ReadOutcome::kRequest) break;
    if (!co_await Serve(self, std::move(request), keep_alive, version)) break;
  }
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

asio::awaitable<Session::ReadOutcome> Session::ReadRequest(Request* out, bool* keep_alive, unsigned* version) {
  const ServerOptions& opt = server_->options_;
  beast::error_code ec;
  if (buffer_.size() == 0) {
    idle_ = true;
    stream_.expires_after(opt.idle_timeout);
    const size_t n = co_await stream_.async_read_some(buffer_.prepare(4096), asio::redirect_error(asio::use_awaitable, ec));
    idle_ = false;
    if (ec) co_return ReadOutcome::kClose;  // EOF, idle timeout, closed while draining
    buffer_.commit(n);
  }
  stream_.expires_after(opt.request_timeout);
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
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof || ec == asio::error::bad_descriptor) {
      co_return ReadOutcome::kClose;
    }
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
  const auto ep = stream_.socket().remote_endpoint(ec);
  if (!ec) out->remote_address = ep.address().to_string() + ":" + std::to_string(ep.port());
  out->connection_id = id_;
  co_return ReadOutcome::kRequest;
}

asio::awaitable<bool> Session::Serve(std::shared_ptr<Session> self, Request request, bool keep_alive,
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
    auto writer = std::make_shared<WriterImpl>(ex);
    try {
      server_->router_.Dispatch(request, writer);
    } catch (const std::exception& e) {
      PAGODA_LOG(Error) << "http: handler for " << request.method << " " << request.path << " threw: " << e.what();
      writer->Respond(ErrorResponse(500, "Internal server error.", ""));
    }
  }
  asio::co_spawn(executor(), Watch(self, ex), asio::detached);
  const bool ok = co_await Pump(*ex, keep_alive, version);
  ex->complete = true;
  beast::error_code ec;
  stream_.socket().cancel(ec);  // ends the watcher's wait
  exchange_.reset();
  --server_->exchanges_active_;
  co_return ok && keep_alive && !server_->draining_;
}

asio::awaitable<bool> Session::Pump(Exchange& ex, bool keep_alive, unsigned version) {
  const ServerOptions& opt = server_->options_;
  beast::error_code ec;
  bool streaming = false;
  stream_.expires_never();
  for (;;) {
    std::deque<OutItem> items;
    bool abandoned;
    {
      std::lock_guard<std::mutex> lock(ex.mu);
      items.swap(ex.queue);
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
        stream_.expires_after(opt.write_timeout);
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
          stream_.expires_after(opt.write_timeout);
          co_await bhttp::async_write_header(stream_, sr, asio::redirect_error(asio::use_awaitable, ec));
          streaming = true;
          break;
        }
        case OutItem::Kind::kSseData: {
          // Coalesce the events queued so far into one chunk.
          std::string chunk = std::move(item.data);
          while (i + 1 < items.size() && items[i + 1].kind == OutItem::Kind::kSseData) {
            chunk += items[++i].data;
          }
          stream_.expires_after(opt.write_timeout);
          co_await asio::async_write(stream_, bhttp::make_chunk(asio::buffer(chunk)),
                                     asio::redirect_error(asio::use_awaitable, ec));
          std::lock_guard<std::mutex> lock(ex.mu);
          ex.Written(chunk.size());
          break;
        }
        case OutItem::Kind::kSseEnd:
          ex.complete = true;  // as for kFull
          stream_.expires_after(opt.write_timeout);
          co_await asio::async_write(stream_, bhttp::make_chunk_last(),
                                     asio::redirect_error(asio::use_awaitable, ec));
          co_return !ec;
      }
      if (ec) {
        ex.Cancel();  // the client is gone or stalled past write_timeout
        co_return false;
      }
    }
    stream_.expires_never();
  }
}

asio::awaitable<void> Session::Watch(std::shared_ptr<Session> self, std::shared_ptr<Exchange> ex) {
  beast::error_code ec;
  co_await stream_.socket().async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
  if (ex->complete || ec == asio::error::operation_aborted) co_return;
  bool gone = static_cast<bool>(ec);
  if (!gone) {
    char c;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    // n > 0: the client pipelined its next request; it is still there.
  }
  if (gone) {
    ex->Cancel();
    wake_.cancel();
  }
}

asio::awaitable<bool> Session::WriteResponse(const Response& r, bool keep_alive, unsigned version) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(r.status), version};
  res.set(bhttp::field::server, "pagoda");
  res.set(bhttp::field::content_type, r.content_type);
  for (const auto& [k, v] : r.headers.fields()) res.set(k, v);
  res.body() = r.body;
  res.keep_alive(keep_alive && !server_->draining_);
  res.prepare_payload();
  beast::error_code ec;
  stream_.expires_after(server_->options_.write_timeout);
  co_await bhttp::async_write(stream_, res, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

asio::awaitable<void> Session::RejectAndClose(const Response& r, unsigned version) {
  if (!co_await WriteResponse(r, false, version)) co_return;
  // Lingering close: the client may still be sending the body we refused; read
  // and drop a bounded amount so that the close does not reset the connection
  // before the client has read the error. Clients such as undici read the
  // answer only after writing the whole body, so the bound covers a body of
  // twice the limit (a refused 9 MiB body against an 8 MiB limit must not end
  // in a reset); the timer bounds the time.
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.expires_after(std::chrono::seconds(1));
  char buf[16384];
  size_t total = 0;
  const size_t limit = std::max<size_t>(size_t{4} << 20, 2 * static_cast<size_t>(server_->options_.max_body_bytes));
  while (total < limit) {
    const size_t n = co_await stream_.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    total += n;
  }
}

Status Server::Impl::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return FailedPrecondition("http server already started");
  ioc_ = std::make_unique<asio::io_context>(options_.io_threads);
  beast::error_code ec;
  const auto address = asio::ip::make_address(options_.address, ec);
  if (ec) return InvalidArgument("bad listen address '" + options_.address + "': " + ec.message());
  const tcp::endpoint endpoint(address, options_.port);
  acceptor_ = std::make_unique<tcp::acceptor>(*ioc_);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return IoError("cannot listen on " + options_.address + ":" + std::to_string(options_.port) + ": " + ec.message());
  }
  port_ = acceptor_->local_endpoint().port();
  work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(ioc_->get_executor());
  asio::co_spawn(*ioc_, Accept(), asio::detached);
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    threads_.emplace_back([this] {
      for (;;) {
        try {
          ioc_->run();
          return;
        } catch (const std::exception& e) {
          PAGODA_LOG(Error) << "http: I/O thread caught: " << e.what();
        }
      }
    });
  }
  started_ = true;
  return Status::Ok();
}

asio::awaitable<void> Server::Impl::Accept() {
  uint64_t next_id = 0;
  for (;;) {
    beast::error_code ec;
    tcp::socket socket = co_await acceptor_->async_accept(asio::make_strand(*ioc_),
                                                          asio::redirect_error(asio::use_awaitable, ec));
    if (draining_ || ec == asio::error::operation_aborted) co_return;
    if (ec) {
      // Out of descriptors and the like: back off instead of spinning.
      PAGODA_LOG(Warning) << "http: accept failed: " << ec.message();
      asio::steady_timer t(*ioc_, std::chrono::milliseconds(50));
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto session = std::make_shared<Session>(this, std::move(socket), ++next_id);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_[next_id] = session;
    }
    ++connections_accepted_;
    ++connections_open_;
    asio::co_spawn(session->executor(), session->Run(session), asio::detached);
  }
}

void Server::Impl::SessionClosed(uint64_t id) {
  --connections_open_;
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.erase(id);
  cv_.notify_all();
}

void Server::Impl::Shutdown(std::chrono::milliseconds deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    stop_requested_ = true;
    draining_ = true;
    cv_.notify_all();
  }
  asio::post(*ioc_, [this] {
    beast::error_code ec;
    acceptor_->close(ec);
  });
  // Sessions are collected under mu_ but used (and released: a release can
  // run ~Session, which takes mu_) outside it.
  auto live = [&] {
    std::vector<std::shared_ptr<Session>> out;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, weak] : sessions_) {
      if (auto s = weak.lock()) out.push_back(std::move(s));
    }
    return out;
  };
  for (auto& s : live()) s->CloseIfIdle();
  auto wait_closed = [&](std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return sessions_.empty(); });
  };
  if (!wait_closed(deadline)) {
    auto remaining = live();
    PAGODA_LOG(Warning) << "http: shutdown deadline passed with " << remaining.size()
                        << " connection(s) open; cancelling them";
    for (auto& s : remaining) s->ForceClose();
    remaining.clear();
    wait_closed(std::chrono::seconds(2));
  }
  {
    std::lock_guard<std::mutex> l(liveness_->mu);
    liveness_->alive = false;
  }
  work_.reset();
  ioc_->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Server::Impl::RunUntilSignal(std::chrono::milliseconds deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopped_) return;
  }
  asio::signal_set signals(*ioc_, SIGINT, SIGTERM);
  signals.async_wait([this](const beast::error_code& ec, int sig) {
    if (ec) return;
    PAGODA_LOG(Info) << "http: signal " << sig << ", shutting down";
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
    cv_.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_requested_; });
  }
  Shutdown(deadline);
  beast::error_code ec;
  signals.cancel(ec);
}

Server::Server(ServerOptions options, Router router)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(router))) {}
Server::~Server() = default;
Status Server::Start() { return impl_->Start(); }
uint16_t Server::port() const { return impl_->port_; }
void Server::Shutdown(std::chrono::milliseconds deadline) { impl_->Shutdown(deadline); }
void Server::RunUntilSignal(std::chrono::milliseconds deadline) { impl_->RunUntilSignal(deadline); }

ServerStats Server::stats() const {
  ServerStats s;
  s.connections_accepted = impl_->connections_accepted_;
  s.connections_open = impl_->connections_open_;
  s.requests = impl_->requests_;
  s.exchanges_active = impl_->exchanges_active_;
  s.bad_requests = impl_->bad_requests_;
  s.queued_bytes = static_cast<uint64_t>(std::max<int64_t>(0, impl_->queued_bytes_->load()));
  return s;
}

}  // namespace pagoda::http
