// UpstreamClient internals. Each call is one coroutine on its own strand;
// Cancel() posts a close onto that strand. A connection (Conn) is a TCP
// stream, or a TLS stream over one; pooled connections are keyed by scheme,
// host:port and CA file, so a TLS session is reused only where it was
// verified the same way.
#include "http/upstream_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/status.h"
#include "http/asio.h"
#include "http/stall_watchdog.h"

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

namespace pagoda::http {

using namespace internal;  // NOLINT: asio / beast aliases

const char* UpstreamErrorName(UpstreamError e) {
  switch (e) {
    case UpstreamError::kNone: return "none";
    case UpstreamError::kConnect: return "connect";
    case UpstreamError::kTls: return "tls";
    case UpstreamError::kTimeout: return "timeout";
    case UpstreamError::kDeadline: return "deadline";
    case UpstreamError::kProtocol: return "protocol";
    case UpstreamError::kClosed: return "closed";
    case UpstreamError::kCancelled: return "cancelled";
  }
  return "unknown";
}

namespace {
using Clock = std::chrono::steady_clock;
namespace ssl = asio::ssl;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
class CallImpl;

// One connection to an upstream: plain TCP, or TLS over TCP.
class Conn {
 public:
  explicit Conn(tcp::socket s) : plain_(std::make_unique<beast::tcp_stream>(std::move(s))) {}
  Conn(tcp::socket s, std::shared_ptr<ssl::context> ctx)
      : ctx_(std::move(ctx)), tls_(std::make_unique<TlsStream>(beast::tcp_stream(std::move(s)), *ctx_)) {}

  beast::tcp_stream& Tcp() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }
  TlsStream* tls() { return tls_.get(); }
  bool is_open() { return Tcp().socket().is_open(); }
  void Close() {
    beast::error_code ec;
    Tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    Tcp().close();
  }
  // Calls f(stream) with the stream to read and write (both return the same type).
  template <class F>
  auto Visit(F&& f) {
    return tls_ ? f(*tls_) : f(*plain_);
  }

 private:
  std::shared_ptr<ssl::context> ctx_;  // outlives tls_ (declared first)
  std::unique_ptr<beast::tcp_stream> plain_;
  std::unique_ptr<TlsStream> tls_;
};

// A client TLS context trusting the system store ("") or `ca_file` only.
pagoda::Result<std::shared_ptr<ssl::context>> MakeTlsContext(const std::string& ca_file) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression);
  beast::error_code ec;
  if (ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
    if (ec) return IoError("TLS: cannot load the system CA store: " + ec.message());
  } else {
    ctx->load_verify_file(ca_file, ec);
    if (ec) return IoError("TLS: cannot load ca_file '" + ca_file + "': " + ec.message());
  }
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

// Why a handshake failed, in words (the verification error when there is one).
std::string TlsProblem(TlsStream& s, const beast::error_code& ec, const std::string& where) {
  const long verify = SSL_get_verify_result(s.native_handle());
  if (verify != X509_V_OK) {
    return "TLS certificate verification failed for " + where + ": " + X509_verify_cert_error_string(verify);
  }
  return "TLS handshake with " + where + " failed: " + ec.message();
}

bool IsClosedError(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == ssl::error::stream_truncated;
}
}  // namespace

class UpstreamClient::Impl {
 public:
  explicit Impl(UpstreamClientOptions options) : options_(options), ioc_(options.io_threads) {
    work_.emplace(ioc_.get_executor());
    for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
      threads_.emplace_back([this] {
        for (;;) {
          try {
            ioc_.run();
            return;
          } catch (const std::exception& e) {
            PAGODA_LOG(Error) << "upstream client: I/O thread caught: " << e.what();
          }
        }
      });
    }
  }

  void Shutdown();

  // The pool: an idle connection to `key`, if any.
  std::unique_ptr<Conn> TakeIdle(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(key);
    while (it != idle_.end() && !it->second.empty()) {
      std::unique_ptr<Conn> c = std::move(it->second.back());
      it->second.pop_back();
      if (c->is_open()) return c;
    }
    return nullptr;
  }
  void PutIdle(const std::string& key, std::unique_ptr<Conn> s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    auto& v = idle_[key];
    if (v.size() >= options_.max_idle_per_host) v.pop_front();
    v.push_back(std::move(s));
  }

  // The TLS context for `ca_file` ("" = the system store), built once.
  Result<std::shared_ptr<ssl::context>> TlsContext(const std::string& ca_file) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tls_contexts_.find(ca_file);
    if (it != tls_contexts_.end()) return it->second;
    auto ctx = MakeTlsContext(ca_file);
    if (ctx.ok()) tls_contexts_[ca_file] = *ctx;  // failures are not kept: the file may be fixed
    return ctx;
  }

  void Register(const std::shared_ptr<CallImpl>& c);
  void Unregister(CallImpl* c);

  const UpstreamClientOptions options_;
  asio::io_context ioc_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> connects_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::deque<std::unique_ptr<Conn>>> idle_;  // guarded by mu_
  std::map<std::string, std::shared_ptr<ssl::context>> tls_contexts_;  // by CA file; guarded by mu_
  std::map<CallImpl*, std::weak_ptr<CallImpl>> active_;          // guarded by mu_
  bool stopping_ = false;                                        // guarded by mu_
};

namespace {

class CallImpl final : public UpstreamCall, public std::enable_shared_from_this<CallImpl> {
 public:
  CallImpl(UpstreamClient::Impl* client, UpstreamRequest req, UpstreamEvents ev)
      : client_(client),
        strand_(asio::make_strand(client->ioc_)),
        read_watch_(strand_),
        req_(std::move(req)),
        ev_(std::move(ev)) {}

  void Cancel() override {
    if (cancelled_.exchange(true)) return;
    asio::post(strand_, [self = shared_from_this()] {
      if (self->conn_) self->conn_->Close();
    });
  }

  void Launch() { asio::co_spawn(strand_, Run(shared_from_this()), asio::detached); }

 private:
  asio::awaitable<void> Run(std::shared_ptr<CallImpl> self);
  asio::awaitable<UpstreamOutcome> Exchange();
  asio::awaitable<bool> Connect(UpstreamOutcome* out);
  asio::awaitable<bool> Handshake(UpstreamOutcome* out);
  // Sets the stream's timer to `limit`, shortened to the deadline.
  void Expire(std::chrono::milliseconds limit) {
    const auto now = Clock::now();
    auto until = now + limit;
    if (req_.deadline < until) until = req_.deadline;
    conn_->Tcp().expires_at(until);
  }
  // Maps a failed operation to an outcome.
  UpstreamOutcome Failure(const beast::error_code& ec, UpstreamError otherwise, const char* what) const {
    UpstreamOutcome o;
    if (cancelled_) {
      o.error = UpstreamError::kCancelled;
    } else if (ec == beast::error::timeout) {
      o.error = Clock::now() >= req_.deadline ? UpstreamError::kDeadline : UpstreamError::kTimeout;
    } else {
      o.error = otherwise;
    }
    o.message = std::string(what) + ": " + ec.message();
    return o;
  }
  std::string Where() const { return req_.host + ":" + std::to_string(req_.port); }
  std::string Key() const { return req_.tls ? "https://" + Where() + " " + req_.ca_file : "http://" + Where(); }

  UpstreamClient::Impl* client_;
  asio::strand<asio::io_context::executor_type> strand_;
  // The idle timeout of body reads (one timer per call, not one per read).
  StallWatchdog read_watch_;
  UpstreamRequest req_;
  UpstreamEvents ev_;
  std::unique_ptr<Conn> conn_;  // strand only
  std::atomic<bool> cancelled_{false};
};

asio::awaitable<void> CallImpl::Run(std::shared_ptr<CallImpl> self) {
  UpstreamOutcome out;
  try {
    out = co_await Exchange();
  } catch (const std::exception& e) {
    out.error = UpstreamError::kProtocol;
    out.message = e.what();
  }
  if (conn_ && out.error != UpstreamError::kNone) conn_->Close();
  conn_.reset();
  if (ev_.on_done) ev_.on_done(out);
  ev_ = {};  // drop captured state now (the caller's writer, guards)
  client_->Unregister(this);
}

asio::awaitable<bool> CallImpl::Connect(UpstreamOutcome* out) {
  std::shared_ptr<ssl::context> tls_ctx;
  if (req_.tls) {
    auto ctx = client_->TlsContext(req_.ca_file);
    if (!ctx.ok()) {
      out->error = UpstreamError::kTls;
      out->message = ctx.status().message();
      co_return false;
    }
    tls_ctx = *ctx;
  }
  beast::error_code ec;
  tcp::resolver resolver(strand_);
  const auto results = co_await resolver.async_resolve(req_.host, std::to_string(req_.port),
                                                       asio::redirect_error(asio::use_awaitable, ec));
  if (ec || cancelled_) {
    *out = Failure(ec, UpstreamError::kConnect, "resolve");
    co_return false;
  }
  tcp::socket socket(client_->ioc_);
  conn_ = tls_ctx ? std::make_unique<Conn>(std::move(socket), std::move(tls_ctx))
                  : std::make_unique<Conn>(std::move(socket));
  Expire(req_.connect_timeout);
  co_await conn_->Tcp().async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
  if (ec || cancelled_) {
    *out = Failure(ec, UpstreamError::kConnect, "connect");
    co_return false;
  }
  conn_->Tcp().socket().set_option(tcp::no_delay(true), ec);
  ++client_->connects_;
  if (conn_->tls() != nullptr && !co_await Handshake(out)) co_return false;
  co_return true;
}

// SNI and host name verification for req_.host, then the handshake (under
// the connect timeout).
asio::awaitable<bool> CallImpl::Handshake(UpstreamOutcome* out) {
  TlsStream& s = *conn_->tls();
  SSL* ssl = s.native_handle();
  beast::error_code ec;
  asio::ip::make_address(req_.host, ec);
  const bool is_ip = !ec;
  bool set = false;
  if (is_ip) {
    set = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), req_.host.c_str()) == 1;
  } else {
    // No SNI for an IP literal (RFC 6066); names get both.
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    set = SSL_set_tlsext_host_name(ssl, req_.host.c_str()) == 1 && SSL_set1_host(ssl, req_.host.c_str()) == 1;
  }
  if (!set) {
    out->error = UpstreamError::kTls;
    out->message = "TLS: cannot verify host name '" + req_.host + "'";
    co_return false;
  }
  ec = {};
  Expire(req_.connect_timeout);
  co_await s.async_handshake(ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
  if (ec || cancelled_) {
    *out = Failure(ec, UpstreamError::kTls, "handshake");
    if (out->error == UpstreamError::kTls) out->message = TlsProblem(s, ec, Where());
    co_return false;
  }
  co_return true;
}

asio::awaitable<UpstreamOutcome> CallImpl::Exchange() {
  UpstreamOutcome out;
  bhttp::request<bhttp::string_body> request;
  request.method_string(req_.method);
  request.target(req_.target);
  request.version(11);
  for (const auto& [k, v] : req_.headers.fields()) request.insert(k, v);
  const bool default_port = req_.port == (req_.tls ? 443 : 80);
  request.set(bhttp::field::host, default_port ? req_.host : Where());
  request.body() = req_.body;
  request.keep_alive(true);
  request.prepare_payload();

  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_slot;
  beast::error_code ec;
  auto token = [&ec] { return asio::redirect_error(asio::use_awaitable, ec); };
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    if (attempt == 0) {
      conn_ = client_->TakeIdle(Key());
      reused = conn_ != nullptr;
    }
    if (!reused && !co_await Connect(&out)) co_return out;
    if (cancelled_) co_return Failure(asio::error::operation_aborted, UpstreamError::kCancelled, "cancelled");
    Expire(req_.first_byte_timeout);
    co_await conn_->Visit([&](auto& s) { return bhttp::async_write(s, request, token()); });
    parser_slot.emplace();
    // Not boost::none: Boost 1.74 compares a Content-Length against an empty
    // optional as "over the limit".
    parser_slot->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (!ec) {
      co_await conn_->Visit([&](auto& s) { return bhttp::async_read_header(s, buffer, *parser_slot, token()); });
    }
    if (!ec) break;
    // A pooled connection the upstream closed while idle: once more on a
    // fresh one (nothing of the response arrived, so nothing was processed
    // twice as far as the client can tell).
    const bool stale = reused && !cancelled_ && buffer.size() == 0 &&
                       (IsClosedError(ec) || ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
    if (!stale) {
      co_return Failure(ec, IsClosedError(ec) ? UpstreamError::kClosed : UpstreamError::kProtocol, "response header");
    }
    conn_->Close();
    conn_.reset();
  }
  auto& parser = *parser_slot;
  UpstreamResponseHead head;
  head.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get()) head.headers.Add(std::string(f.name_string()), std::string(f.value()));
  out.head_received = true;
  if (ev_.on_head) ev_.on_head(head);
  char buf[16384];
  conn_->Tcp().expires_never();
  read_watch_.Start(weak_from_this(), req_.idle_timeout, [this] {
    if (conn_) conn_->Close();
  });
  struct StopWatch {
    StallWatchdog& w;
    ~StopWatch() { w.Stop(); }
  } stop_watch{read_watch_};
  while (!parser.is_done()) {
    if (cancelled_) {
      out.error = UpstreamError::kCancelled;
      co_return out;
    }
    if (ev_.paused && ev_.paused()) {
      asio::steady_timer pause(co_await asio::this_coro::executor);
      while (!cancelled_ && ev_.paused()) {
        if (Clock::now() >= req_.deadline) {
          out.error = UpstreamError::kDeadline;
          out.message = "deadline passed while the client was not reading";
          co_return out;
        }
        pause.expires_after(std::chrono::milliseconds(5));
        co_await pause.async_wait(token());
      }
      ec = {};
      continue;  // re-checks cancellation
    }
    parser.get().body().data = buf;
    parser.get().body().size = sizeof(buf);
    read_watch_.Begin(std::min(Clock::now() + req_.idle_timeout, req_.deadline));
    co_await conn_->Visit([&](auto& s) { return bhttp::async_read_some(s, buffer, parser, token()); });
    read_watch_.End();
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec && read_watch_.stalled()) ec = beast::error::timeout;
    const size_t n = sizeof(buf) - parser.get().body().size;
    if (n > 0 && ev_.on_body && !cancelled_) ev_.on_body(std::string_view(buf, n));
    if (ec) {
      const bool closed = IsClosedError(ec) || ec == bhttp::error::partial_message || ec == asio::error::connection_reset;
      UpstreamOutcome f = Failure(ec, closed ? UpstreamError::kClosed : UpstreamError::kProtocol, "response body");
      f.head_received = true;
      co_return f;
    }
  }
  if (cancelled_) {
    out.error = UpstreamError::kCancelled;
    co_return out;
  }
  if (parser.get().keep_alive() && buffer.size() == 0) {
    conn_->Tcp().expires_never();
    client_->PutIdle(Key(), std::move(conn_));
  }
  conn_.reset();
  co_return out;
}

}  // namespace

void UpstreamClient::Impl::Register(const std::shared_ptr<CallImpl>& c) {
  std::lock_guard<std::mutex> lock(mu_);
  active_[c.get()] = c;
}

void UpstreamClient::Impl::Unregister(CallImpl* c) {
  std::lock_guard<std::mutex> lock(mu_);
  active_.erase(c);
  cv_.notify_all();
}

void UpstreamClient::Impl::Shutdown() {
  std::vector<std::shared_ptr<CallImpl>> calls;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [p, w] : active_) {
      if (auto c = w.lock()) calls.push_back(std::move(c));
    }
  }
  for (auto& c : calls) c->Cancel();
  calls.clear();
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return active_.empty(); });
  }
  asio::post(ioc_, [this] {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.clear();
  });
  work_.reset();
  ioc_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  std::lock_guard<std::mutex> lock(mu_);
  idle_.clear();
}

UpstreamClient::UpstreamClient(UpstreamClientOptions options) : impl_(std::make_shared<Impl>(options)) {}
UpstreamClient::~UpstreamClient() { impl_->Shutdown(); }

std::shared_ptr<UpstreamCall> UpstreamClient::Start(UpstreamRequest request, UpstreamEvents events) {
  bool stopping;
  {
    std::lock_guard<std::mutex> lock(impl_->mu_);
    stopping = impl_->stopping_;
  }
  if (stopping) {
    UpstreamOutcome o;
    o.error = UpstreamError::kCancelled;
    o.message = "client shutting down";
    if (events.on_done) events.on_done(o);
    events = {};
  }
  auto call = std::make_shared<CallImpl>(impl_.get(), std::move(request), std::move(events));
  if (stopping) return call;
  impl_->Register(call);
  call->Launch();
  return call;
}

size_t UpstreamClient::idle_connections() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  size_t n = 0;
  for (const auto& [k, v] : impl_->idle_) n += v.size();
  return n;
}

uint64_t UpstreamClient::connects() const { return impl_->connects_; }

size_t UpstreamClient::calls_active() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->active_.size();
}

}  // namespace pagoda::http
