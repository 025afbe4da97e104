#include "http/client.h"

#include <sys/socket.h>
#include <sys/time.h>

#include "http/asio.h"

namespace pagoda::http {

using namespace internal;  // NOLINT: asio / beast aliases

class Client::Impl {
 public:
  Impl(std::string host, uint16_t port, std::chrono::milliseconds timeout)
      : host_(std::move(host)), port_(port), timeout_(timeout), socket_(ioc_) {}

  Status Connect() {
    Close();
    beast::error_code ec;
    tcp::resolver resolver(ioc_);
    const auto results = resolver.resolve(host_, std::to_string(port_), ec);
    if (ec) return IoError("resolve " + host_ + ": " + ec.message());
    asio::connect(socket_, results, ec);
    if (ec) return IoError("connect " + host_ + ":" + std::to_string(port_) + ": " + ec.message());
    // Blocking I/O with a bound: SO_RCVTIMEO / SO_SNDTIMEO.
    timeval tv{};
    tv.tv_sec = timeout_.count() / 1000;
    tv.tv_usec = (timeout_.count() % 1000) * 1000;
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    socket_.set_option(tcp::no_delay(true), ec);
    buffer_.clear();
    ++connects_;
    return Status::Ok();
  }

  void Close() {
    beast::error_code ec;
    if (socket_.is_open()) {
      socket_.shutdown(tcp::socket::shutdown_both, ec);
      socket_.close(ec);
    }
  }

  Status Write(std::string_view method, std::string_view target, std::string_view body, const Headers& headers) {
    bhttp::request<bhttp::string_body> req;
    req.method_string(beast::string_view(method.data(), method.size()));
    req.target(beast::string_view(target.data(), target.size()));
    req.version(11);
    req.set(bhttp::field::host, host_ + ":" + std::to_string(port_));
    req.set(bhttp::field::user_agent, "pagoda-client");
    if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
    for (const auto& [k, v] : headers.fields()) req.set(k, v);
    req.body() = std::string(body);
    req.keep_alive(true);
    req.prepare_payload();
    beast::error_code ec;
    bhttp::write(socket_, req, ec);
    if (ec) return IoError("write: " + ec.message());
    return Status::Ok();
  }

  static void CopyHeaders(const bhttp::fields& from, Headers* to) {
    for (const auto& f : from) to->Add(std::string(f.name_string()), std::string(f.value()));
  }

  Result<ClientResponse> ReadFull() {
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(1ull << 30);
    beast::error_code ec;
    bhttp::read(socket_, buffer_, parser, ec);
    if (ec) return IoError("read: " + ec.message());
    ClientResponse r;
    auto& res = parser.get();
    r.status = static_cast<int>(res.result_int());
    CopyHeaders(res, &r.headers);
    r.body = std::move(res.body());
    r.keep_alive = res.keep_alive();
    if (!r.keep_alive) Close();
    return r;
  }

  Result<ClientResponse> Send(std::string_view method, std::string_view target, std::string_view body,
                              const Headers& headers) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = socket_.is_open();
      if (!reused) PAGODA_RETURN_IF_ERROR(Connect());
      Status st = Write(method, target, body, headers);
      if (st.ok()) {
        auto r = ReadFull();
        if (r.ok()) return r;
        st = r.status();
      }
      Close();
      if (!reused) return st;  // a fresh connection failed: no retry
    }
    return IoError("request failed after reconnecting");
  }

  Result<ClientResponse> SendSse(std::string_view method, std::string_view target, std::string_view body,
                                 const std::function<bool(std::string_view)>& on_event, const Headers& headers) {
    if (!socket_.is_open()) PAGODA_RETURN_IF_ERROR(Connect());
    Status st = Write(method, target, body, headers);
    if (!st.ok()) {
      Close();
      return st;
    }
    bhttp::response_parser<bhttp::buffer_body> parser;
    parser.body_limit(boost::none);
    beast::error_code ec;
    bhttp::read_header(socket_, buffer_, parser, ec);
    if (ec) {
      Close();
      return IoError("read header: " + ec.message());
    }
    ClientResponse r;
    r.status = static_cast<int>(parser.get().result_int());
    CopyHeaders(parser.get(), &r.headers);
    r.keep_alive = parser.get().keep_alive();
    const std::string* ct = r.headers.Find("Content-Type");
    const bool sse = ct != nullptr && ct->find("text/event-stream") != std::string::npos;
    std::string pending;
    char buf[8192];
    while (!parser.is_done()) {
      parser.get().body().data = buf;
      parser.get().body().size = sizeof(buf);
      bhttp::read_some(socket_, buffer_, parser, ec);
      if (ec == bhttp::error::need_buffer) ec = {};
      if (ec) {
        Close();
        return IoError("read body: " + ec.message());
      }
      pending.append(buf, sizeof(buf) - parser.get().body().size);
      if (!sse) continue;
      size_t end;
      while ((end = pending.find("\n\n")) != std::string::npos) {
        std::string data;
        bool any = false;
        size_t pos = 0;
        const std::string_view event(pending.data(), end);
        while (pos <= event.size()) {
          size_t nl = event.find('\n', pos);
          if (nl == std::string_view::npos) nl = event.size();
          std::string_view line = event.substr(pos, nl - pos);
          if (line.substr(0, 5) == "data:") {
            line.remove_prefix(5);
            if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
            if (any) data += '\n';
            data.append(line);
            any = true;
          }
          pos = nl + 1;
        }
        pending.erase(0, end + 2);
        if (any && !on_event(data)) {
          Close();
          return r;
        }
      }
    }
    if (!sse) r.body = std::move(pending);
    if (!r.keep_alive) Close();
    return r;
  }

  std::string host_;
  uint16_t port_;
  std::chrono::milliseconds timeout_;
  asio::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  uint64_t connects_ = 0;
};

Client::Client(std::string host, uint16_t port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(std::move(host), port, timeout)) {}
Client::~Client() = default;

Result<ClientResponse> Client::Send(std::string_view method, std::string_view target, std::string_view body,
                                    const Headers& headers) {
  return impl_->Send(method, target, body, headers);
}

Result<ClientResponse> Client::SendSse(std::string_view method, std::string_view target, std::string_view body,
                                       const std::function<bool(std::string_view)>& on_event,
                                       const Headers& headers) {
  return impl_->SendSse(method, target, body, on_event, headers);
}

void Client::Close() { impl_->Close(); }
bool Client::connected() const { return impl_->socket_.is_open(); }
uint64_t Client::connects() const { return impl_->connects_; }

}  // namespace pagoda::http
