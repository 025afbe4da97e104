// TestPki: a throwaway certificate authority made at test time with OpenSSL's
// C API (EC P-256 keys, valid for a day), and the server certificates it
// signs for localhost and 127.0.0.1, written as PEM files into a temporary
// directory that goes away with the object.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "http/tls_files.h"

namespace pagoda::http::testing {

class TestPki {
 public:
  explicit TestPki(std::string ca_name = "pagoda throwaway test CA") {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pagoda-pki-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    ca_key_ = EVP_EC_gen("P-256");
    ca_cert_ = MakeCert(ca_key_, ca_name, 1, nullptr, nullptr);
    WriteCert(ca_cert_, ca_file());
  }
  ~TestPki() {
    X509_free(ca_cert_);
    EVP_PKEY_free(ca_key_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& dir() const { return dir_; }
  std::string ca_file() const { return Path("ca.pem"); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // A server certificate (CN `cn`, SAN localhost and 127.0.0.1, serial
  // `serial`) and its key: <name>.pem and <name>.key. With `encrypt_key` the
  // key file is passphrase-protected.
  TlsFiles Issue(const std::string& name, long serial, const std::string& cn = "localhost",
                 bool encrypt_key = false) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = MakeCert(key, cn, serial, ca_cert_, ca_key_);
    TlsFiles files{Path(name + ".pem"), Path(name + ".key")};
    WriteCert(cert, files.cert_file);
    WriteKey(key, files.key_file, encrypt_key);
    X509_free(cert);
    EVP_PKEY_free(key);
    return files;
  }

  std::string Write(const std::string& name, const std::string& content) const {
    std::ofstream(Path(name), std::ios::binary) << content;
    return Path(name);
  }

 private:
  static void AddExt(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value);
    if (ext == nullptr) throw std::runtime_error(std::string("bad extension ") + value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }

  // Self-signed (a CA) without an issuer; else a server leaf signed by it.
  static X509* MakeCert(EVP_PKEY* key, const std::string& cn, long serial, X509* issuer, EVP_PKEY* issuer_key) {
    X509* cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                               0);
    X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : cert, cert, nullptr, nullptr, 0);
    AddExt(cert, &ctx, NID_subject_key_identifier, "hash");
    if (issuer == nullptr) {
      AddExt(cert, &ctx, NID_basic_constraints, "critical,CA:TRUE");
      AddExt(cert, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
      AddExt(cert, &ctx, NID_authority_key_identifier, "keyid");
      AddExt(cert, &ctx, NID_basic_constraints, "CA:FALSE");
      AddExt(cert, &ctx, NID_key_usage, "critical,digitalSignature");
      AddExt(cert, &ctx, NID_ext_key_usage, "serverAuth");
      AddExt(cert, &ctx, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    }
    X509_sign(cert, issuer_key != nullptr ? issuer_key : key, EVP_sha256());
    return cert;
  }

  static void WriteCert(X509* cert, const std::string& path) {
    BIO* bio = BIO_new_file(path.c_str(), "w");
    PEM_write_bio_X509(bio, cert);
    BIO_free(bio);
  }
  static void WriteKey(EVP_PKEY* key, const std::string& path, bool encrypt) {
    BIO* bio = BIO_new_file(path.c_str(), "w");
    if (encrypt) {
      char pass[] = "test-passphrase";
      PEM_write_bio_PKCS8PrivateKey(bio, key, EVP_aes_128_cbc(), pass, sizeof(pass) - 1, nullptr, nullptr);
    } else {
      PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    }
    BIO_free(bio);
  }

  std::string dir_;
  EVP_PKEY* ca_key_ = nullptr;
  X509* ca_cert_ = nullptr;
};

}  // namespace pagoda::http::testing
