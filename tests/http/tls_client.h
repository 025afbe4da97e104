// TlsClient: a blocking loopback TLS client over raw OpenSSL for tests: it
// verifies the server's certificate against one CA file and the address
// 127.0.0.1, offers ALPN h2 and http/1.1, and reads and writes raw bytes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::http::testing {

class TlsClient {
 public:
  TlsClient(uint16_t port, const std::string& ca_file, int timeout_ms = 5000) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    if (SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr) != 1) {
      error_ = "cannot load CA file " + ca_file;
      return;
    }
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      error_ = "connect failed";
      return;
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    static const unsigned char kAlpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_set_alpn_protos(ssl_, kAlpn, sizeof(kAlpn));
    if (SSL_connect(ssl_) != 1) {
      const long verify = SSL_get_verify_result(ssl_);
      error_ = verify != X509_V_OK ? std::string("verify: ") + X509_verify_cert_error_string(verify)
                                   : "handshake: " + Errors();
      return;
    }
    ok_ = true;
  }
  ~TlsClient() {
    Close(false);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }

  bool Send(std::string_view s) {
    return ok_ && SSL_write(ssl_, s.data(), static_cast<int>(s.size())) == static_cast<int>(s.size());
  }
  // Reads until `marker` appears (empty: until the peer closes), or an error or timeout.
  std::string ReadUntil(std::string_view marker = {}) {
    std::string out;
    char buf[4096];
    while (ok_ && (marker.empty() || out.find(marker) == std::string::npos)) {
      const int n = SSL_read(ssl_, buf, sizeof(buf));
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  std::string ReadAll() { return ReadUntil({}); }

  // One request with Connection: close; the raw response.
  std::string Get(std::string_view target) {
    Send("GET " + std::string(target) + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    return ReadAll();
  }

  long peer_serial() const {
    X509* cert = SSL_get1_peer_certificate(ssl_);
    if (cert == nullptr) return -1;
    const long serial = ASN1_INTEGER_get(X509_get0_serialNumber(cert));
    X509_free(cert);
    return serial;
  }
  std::string alpn() const {
    const unsigned char* p = nullptr;
    unsigned int n = 0;
    SSL_get0_alpn_selected(ssl_, &p, &n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  std::string protocol() const { return SSL_get_version(ssl_); }

  // With `notify`, sends close_notify first (an orderly TLS close).
  void Close(bool notify = true) {
    if (ssl_ != nullptr) {
      if (notify && ok_) SSL_shutdown(ssl_);
      SSL_free(ssl_);
      ssl_ = nullptr;
    }
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ok_ = false;
  }

 private:
  static std::string Errors() {
    std::string out;
    while (const unsigned long e = ERR_get_error()) {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof(buf));
      if (!out.empty()) out += "; ";
      out += buf;
    }
    return out.empty() ? "no detail" : out;
  }

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool ok_ = false;
  std::string error_;
};

}  // namespace pagoda::http::testing
