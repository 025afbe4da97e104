// Server::Impl: the listener, the I/O threads, graceful shutdown, signals
// and TLS reloads. The connections themselves are sessions (session.h).
#include "http/server.h"

#include <algorithm>
#include <csignal>

#include "base/log.h"
#include "http/server_impl.h"
#include "http/session.h"

namespace pagoda::http {

using namespace internal;  // NOLINT: asio / beast aliases

Status Server::Impl::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return FailedPrecondition("http server already started");
  if (options_.tls.enabled()) PAGODA_RETURN_IF_ERROR(tls_.Load(options_.tls));
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
    // A TLS connection keeps the certificate in force now, whatever reloads follow.
    auto session = MakeSession(this, std::move(socket), ++next_id, options_.tls.enabled() ? tls_.current() : nullptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_[next_id] = session;
    }
    ++connections_accepted_;
    ++connections_open_;
    session->Start();
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
    std::vector<std::shared_ptr<SessionHandle>> out;
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

void Server::Impl::RunUntilSignal(std::chrono::milliseconds deadline, std::function<void()> on_hangup) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stopped_) return;
  }
  asio::signal_set signals(*ioc_, SIGINT, SIGTERM);
  if (on_hangup) signals.add(SIGHUP);
  // Re-arms itself after each SIGHUP; the hangup work runs below, on this thread.
  std::function<void(const beast::error_code&, int)> on_signal = [&](const beast::error_code& ec, int sig) {
    if (ec) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (sig == SIGHUP) {
      ++hangups_pending_;
      signals.async_wait(on_signal);
    } else {
      PAGODA_LOG(Info) << "http: signal " << sig << ", shutting down";
      stop_requested_ = true;
    }
    cv_.notify_all();
  };
  signals.async_wait(on_signal);
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stop_requested_ || hangups_pending_ > 0; });
    if (stop_requested_) break;
    hangups_pending_ = 0;
    lock.unlock();
    on_hangup();
  }
  Shutdown(deadline);
  // After the I/O threads have stopped: no handler runs concurrently.
  beast::error_code ec;
  signals.cancel(ec);
}

Status Server::Impl::ReloadTls(const TlsFiles* files) {
  if (!options_.tls.enabled()) {
    return FailedPrecondition("TLS reload: the server speaks plain HTTP (it was started without a certificate)");
  }
  const TlsFiles next = files != nullptr ? *files : tls_.files();
  if (Status s = tls_.Load(next); !s.ok()) {
    PAGODA_LOG(Error) << "http: TLS reload refused, the current certificate stays: " << s.message();
    return s;
  }
  PAGODA_LOG(Info) << "http: TLS certificate reloaded from " << next.cert_file << "; new connections use it";
  return Status::Ok();
}

Server::Server(ServerOptions options, Router router)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(router))) {}
Server::~Server() = default;
Status Server::Start() { return impl_->Start(); }
uint16_t Server::port() const { return impl_->port_; }
void Server::Shutdown(std::chrono::milliseconds deadline) { impl_->Shutdown(deadline); }
void Server::RunUntilSignal(std::chrono::milliseconds deadline, std::function<void()> on_hangup) {
  impl_->RunUntilSignal(deadline, std::move(on_hangup));
}
bool Server::tls() const { return impl_->options_.tls.enabled(); }
Status Server::ReloadTls() { return impl_->ReloadTls(nullptr); }
Status Server::ReloadTls(const TlsFiles& files) { return impl_->ReloadTls(&files); }

ServerStats Server::stats() const {
  ServerStats s;
  s.connections_accepted = impl_->connections_accepted_;
  s.connections_open = impl_->connections_open_;
  s.requests = impl_->requests_;
  s.exchanges_active = impl_->exchanges_active_;
  s.bad_requests = impl_->bad_requests_;
  s.tls_handshake_failures = impl_->tls_handshake_failures_;
  s.queued_bytes = static_cast<uint64_t>(std::max<int64_t>(0, impl_->queued_bytes_->load()));
  return s;
}

}  // namespace pagoda::http
