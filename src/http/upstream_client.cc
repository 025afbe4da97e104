// UpstreamClient internals. Each call is one coroutine on its own strand;
// Cancel() posts a close onto that strand. Pooled connections are plain
// sockets on the client's io_context, keyed by "host:port".
#include "http/upstream_client.h"

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
#include "http/asio.h"

namespace pagoda::http {

using namespace internal;  // NOLINT: asio / beast aliases

const char* UpstreamErrorName(UpstreamError e) {
  switch (e) {
    case UpstreamError::kNone: return "none";
    case UpstreamError::kConnect: return "connect";
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
class CallImpl;
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
  std::optional<tcp::socket> TakeIdle(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_.find(key);
    while (it != idle_.end() && !it->second.empty()) {
      tcp::socket s = std::move(it->second.back());
      it->second.pop_back();
      if (s.is_open()) return s;
    }
    return std::nullopt;
  }
  void PutIdle(const std::string& key, tcp::socket s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    auto& v = idle_[key];
    if (v.size() >= options_.max_idle_per_host) v.pop_front();
    v.push_back(std::move(s));
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
  std::map<std::string, std::deque<tcp::socket>> idle_;          // guarded by mu_
  std::map<CallImpl*, std::weak_ptr<CallImpl>> active_;          // guarded by mu_
  bool stopping_ = false;                                        // guarded by mu_
};

namespace {

class CallImpl final : public UpstreamCall, public std::enable_shared_from_this<CallImpl> {
 public:
  CallImpl(UpstreamClient::Impl* client, UpstreamRequest req, UpstreamEvents ev)
      : client_(client), strand_(asio::make_strand(client->ioc_)), req_(std::move(req)), ev_(std::move(ev)) {}

  void Cancel() override {
    if (cancelled_.exchange(true)) return;
    asio::post(strand_, [self = shared_from_this()] {
      if (self->stream_) {
        beast::error_code ec;
        self->stream_->socket().shutdown(tcp::socket::shutdown_both, ec);
        self->stream_->close();
      }
    });
  }

  void Launch() { asio::co_spawn(strand_, Run(shared_from_this()), asio::detached); }

 private:
  asio::awaitable<void> Run(std::shared_ptr<CallImpl> self);
  asio::awaitable<UpstreamOutcome> Exchange();
  asio::awaitable<bool> Connect(UpstreamOutcome* out);
  // Sets the stream's timer to `limit`, shortened to the deadline.
  void Expire(std::chrono::milliseconds limit) {
    const auto now = Clock::now();
    auto until = now + limit;
    if (req_.deadline < until) until = req_.deadline;
    stream_->expires_at(until);
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
  std::string Key() const { return req_.host + ":" + std::to_string(req_.port); }

  UpstreamClient::Impl* client_;
  asio::strand<asio::io_context::executor_type> strand_;
  UpstreamRequest req_;
  UpstreamEvents ev_;
  std::optional<beast::tcp_stream> stream_;  // strand only
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
  if (stream_ && out.error != UpstreamError::kNone) stream_->close();
  stream_.reset();
  if (ev_.on_done) ev_.on_done(out);
  ev_ = {};  // drop captured state now (the caller's writer, guards)
  client_->Unregister(this);
}

asio::awaitable<bool> CallImpl::Connect(UpstreamOutcome* out) {
  beast::error_code ec;
  tcp::resolver resolver(strand_);
  const auto results = co_await resolver.async_resolve(req_.host, std::to_string(req_.port),
                                                       asio::redirect_error(asio::use_awaitable, ec));
  if (ec || cancelled_) {
    *out = Failure(ec, UpstreamError::kConnect, "resolve");
    co_return false;
  }
  stream_.emplace(tcp::socket(client_->ioc_));
  Expire(req_.connect_timeout);
  co_await stream_->async_connect(results, asio::redirect_error(asio::use_awaitable, ec));
  if (ec || cancelled_) {
    *out = Failure(ec, UpstreamError::kConnect, "connect");
    co_return false;
  }
  stream_->socket().set_option(tcp::no_delay(true), ec);
  ++client_->connects_;
  co_return true;
}

asio::awaitable<UpstreamOutcome> CallImpl::Exchange() {
  UpstreamOutcome out;
  if (req_.tls) {
    out.error = UpstreamError::kConnect;
    out.message = "https upstreams are not supported by this build";
    co_return out;
  }
  bhttp::request<bhttp::string_body> request;
  request.method_string(req_.method);
  request.target(req_.target);
  request.version(11);
  for (const auto& [k, v] : req_.headers.fields()) request.insert(k, v);
  request.set(bhttp::field::host, req_.host + ":" + std::to_string(req_.port));
  request.body() = req_.body;
  request.keep_alive(true);
  request.prepare_payload();

  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_slot;
  beast::error_code ec;
  for (int attempt = 0;; ++attempt) {
    bool reused = false;
    if (attempt == 0) {
      if (auto s = client_->TakeIdle(Key())) {
        stream_.emplace(std::move(*s));
        reused = true;
      }
    }
    if (!reused && !co_await Connect(&out)) co_return out;
    if (cancelled_) co_return Failure(asio::error::operation_aborted, UpstreamError::kCancelled, "cancelled");
    Expire(req_.first_byte_timeout);
    co_await bhttp::async_write(*stream_, request, asio::redirect_error(asio::use_awaitable, ec));
    parser_slot.emplace();
    // Not boost::none: Boost 1.74 compares a Content-Length against an empty
    // optional as "over the limit".
    parser_slot->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (!ec) {
      co_await bhttp::async_read_header(*stream_, buffer, *parser_slot, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (!ec) break;
    // A pooled connection the upstream closed while idle: once more on a
    // fresh one (nothing of the response arrived, so nothing was processed
    // twice as far as the client can tell).
    const bool stale = reused && !cancelled_ && buffer.size() == 0 &&
                       (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
                        ec == asio::error::connection_reset || ec == asio::error::broken_pipe);
    if (!stale) {
      co_return Failure(ec, ec == bhttp::error::end_of_stream || ec == asio::error::eof ? UpstreamError::kClosed
                                                                                     : UpstreamError::kProtocol,
                        "response header");
    }
    stream_->close();
    stream_.reset();
  }
  auto& parser = *parser_slot;
  UpstreamResponseHead head;
  head.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get()) head.headers.Add(std::string(f.name_string()), std::string(f.value()));
  out.head_received = true;
  if (ev_.on_head) ev_.on_head(head);
  char buf[16384];
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
        co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      ec = {};
      continue;  // re-checks cancellation
    }
    parser.get().body().data = buf;
    parser.get().body().size = sizeof(buf);
    Expire(req_.idle_timeout);
    co_await bhttp::async_read_some(*stream_, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == bhttp::error::need_buffer) ec = {};
    const size_t n = sizeof(buf) - parser.get().body().size;
    if (n > 0 && ev_.on_body && !cancelled_) ev_.on_body(std::string_view(buf, n));
    if (ec) {
      UpstreamOutcome f = Failure(ec,
                                  ec == bhttp::error::partial_message || ec == bhttp::error::end_of_stream ||
                                          ec == asio::error::eof || ec == asio::error::connection_reset
                                      ? UpstreamError::kClosed
                                      : UpstreamError::kProtocol,
                                  "response body");
      f.head_received = true;
      co_return f;
    }
  }
  if (cancelled_) {
    out.error = UpstreamError::kCancelled;
    co_return out;
  }
  if (parser.get().keep_alive() && buffer.size() == 0) {
    stream_->expires_never();
    client_->PutIdle(Key(), stream_->release_socket());
  }
  stream_.reset();
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
