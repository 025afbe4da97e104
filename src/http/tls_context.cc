#include "http/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "base/log.h"

namespace pagoda::http {
namespace internal {
namespace {

// TLS 1.2 suites with forward secrecy and AEAD only (TLS 1.3 has its own,
// all good); the server's order wins.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// OpenSSL's queued errors in words ("" when none), and clears the queue.
std::string OpenSslErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(e));
  }
  return out;
}

// Keys are never decrypted with a passphrase: fail instead of prompting on a tty.
extern "C" int NoPassphrase(char*, int, int, void*) { return 0; }

// Answers ALPN with http/1.1 when the client offers it (h2 never), and with
// nothing otherwise: HTTP/1.1 is what the server speaks either way.
extern "C" int SelectHttp11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                            unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof(kHttp11), in, inlen) == OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

Status CheckReadable(const std::string& path, const char* what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return IoError(std::string(what) + " '" + path + "' cannot be read: " + std::strerror(errno));
  std::fclose(f);
  return Status::Ok();
}

// PEM marks both encrypted forms: "BEGIN ENCRYPTED PRIVATE KEY" (PKCS#8) and
// "Proc-Type: 4,ENCRYPTED" (the traditional one).
bool LooksEncrypted(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.find("ENCRYPTED") != std::string::npos;
}

Result<EVP_PKEY*> ReadPrivateKey(const std::string& path) {
  if (LooksEncrypted(path)) {
    return InvalidArgument("TLS key file '" + path +
                           "' is encrypted; passphrase-protected keys are not supported (decrypt it, e.g. "
                           "openssl pkey -in KEY -out KEY.plain, and restrict the file's permissions)");
  }
  BIO* bio = BIO_new_file(path.c_str(), "r");
  if (bio == nullptr) return IoError("TLS key file '" + path + "' cannot be read: " + OpenSslErrors());
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, NoPassphrase, nullptr);
  BIO_free(bio);
  if (key != nullptr) return key;
  return InvalidArgument("TLS key file '" + path + "' holds no PEM private key (" + OpenSslErrors() + ")");
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const TlsFiles& files) {
  if (files.cert_file.empty() || files.key_file.empty()) {
    return InvalidArgument(files.cert_file.empty() ? "TLS: a key file was given without its certificate file"
                                                   : "TLS: a certificate file was given without its key file");
  }
  PAGODA_RETURN_IF_ERROR(CheckReadable(files.cert_file, "TLS certificate file"));
  PAGODA_RETURN_IF_ERROR(CheckReadable(files.key_file, "TLS key file"));
  ERR_clear_error();
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(native, SSL_OP_ALL | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                  SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);  // idle keep-alive connections hold no record buffers
  if (SSL_CTX_set_cipher_list(native, kTls12Ciphers) != 1) {
    return Internal("TLS: the cipher list was refused: " + OpenSslErrors());
  }
  SSL_CTX_set_default_passwd_cb(native, NoPassphrase);
  SSL_CTX_set_alpn_select_cb(native, SelectHttp11, nullptr);

  if (SSL_CTX_use_certificate_chain_file(native, files.cert_file.c_str()) != 1) {
    return InvalidArgument("TLS certificate file '" + files.cert_file + "' holds no usable PEM certificate (" +
                           OpenSslErrors() + ")");
  }
  if (X509* cert = SSL_CTX_get0_certificate(native); cert != nullptr && X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    PAGODA_LOG(Warning) << "http: the TLS certificate in " << files.cert_file << " has expired";
  }
  auto key = ReadPrivateKey(files.key_file);
  if (!key.ok()) return key.status();
  const bool matches = SSL_CTX_use_PrivateKey(native, *key) == 1 && SSL_CTX_check_private_key(native) == 1;
  EVP_PKEY_free(*key);
  if (!matches) {
    return InvalidArgument("TLS key file '" + files.key_file + "' does not match the certificate in '" +
                           files.cert_file + "' (" + OpenSslErrors() + ")");
  }
  ERR_clear_error();
  return ctx;
}

Status ServerTlsContext::Load(const TlsFiles& files) {
  auto ctx = MakeServerTlsContext(files);
  if (!ctx.ok()) return ctx.status();
  std::lock_guard<std::mutex> lock(mu_);
  ctx_ = std::move(ctx).value();
  files_ = files;
  return Status::Ok();
}

std::shared_ptr<ssl::context> ServerTlsContext::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ctx_;
}

TlsFiles ServerTlsContext::files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_;
}

}  // namespace internal

Status CheckTlsFiles(const TlsFiles& files) { return internal::MakeServerTlsContext(files).status(); }

}  // namespace pagoda::http
