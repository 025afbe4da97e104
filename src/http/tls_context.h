// The https server's TLS side, private to src/http: the context policy
// (TLS 1.2 or newer, no compression, the server's cipher order, no
// renegotiation, HTTP/1.1 only via ALPN) and the holder of the current
// certificate. Reload builds a whole new context and swaps it in, so that
// connections accepted afterwards use the new certificate while open ones
// keep the context they started with (each holds a reference).
// Thread safety: ServerTlsContext is safe from any thread.
#pragma once

#include <memory>
#include <mutex>

#include "base/status.h"
#include "http/asio.h"
#include "http/tls_files.h"

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

namespace pagoda::http::internal {

namespace ssl = boost::asio::ssl;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// A server context holding the certificate chain and key of `files`.
// Errors name the file at fault (see CheckTlsFiles).
Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const TlsFiles& files);

class ServerTlsContext {
 public:
  // Loads `files`; on error the current context (if any) stays.
  Status Load(const TlsFiles& files);
  // nullptr before the first successful Load.
  std::shared_ptr<ssl::context> current() const;
  // The files of the current context.
  TlsFiles files() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<ssl::context> ctx_;  // guarded by mu_
  TlsFiles files_;                     // guarded by mu_
};

}  // namespace pagoda::http::internal
