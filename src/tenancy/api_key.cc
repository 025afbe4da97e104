#include "tenancy/api_key.h"

#include "base/base64.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cctype>

namespace pagoda::tenancy {
namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string Hex(const unsigned char* p, size_t n) {
  std::string s(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kHex[p[i] >> 4];
    s[2 * i + 1] = kHex[p[i] & 15];
  }
  return s;
}


}  // namespace

Result<GeneratedKey> GenerateKey() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return IoError("api key: the OpenSSL random generator failed");
  GeneratedKey k;
  k.secret = std::string(kKeyPrefix) + Base64Encode(bytes, sizeof(bytes), Base64Alphabet::kUrlNoPad);
  OPENSSL_cleanse(bytes, sizeof(bytes));
  PAGODA_ASSIGN_OR_RETURN(k.id, RandomId("key_"));
  return k;
}

Result<std::string> RandomId(std::string_view prefix, size_t random_bytes) {
  unsigned char bytes[32];
  if (random_bytes == 0 || random_bytes > sizeof(bytes)) return InvalidArgument("random id: 1..32 bytes");
  if (RAND_bytes(bytes, static_cast<int>(random_bytes)) != 1) {
    return IoError("random id: the OpenSSL random generator failed");
  }
  return std::string(prefix) + Hex(bytes, random_bytes);
}

std::string HashKey(std::string_view secret, std::string_view pepper) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (pepper.empty()) {
    SHA256(reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), md);
    len = SHA256_DIGEST_LENGTH;
  } else {
    HMAC(EVP_sha256(), pepper.data(), static_cast<int>(pepper.size()),
         reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), md, &len);
  }
  return Hex(md, len);
}

bool HashesEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Status ValidateKeyString(std::string_view key) {
  if (key.empty()) return InvalidArgument("API key is missing");
  if (key.size() > kMaxKeyBytes) {
    return InvalidArgument("API key is too long (" + std::to_string(key.size()) + " bytes, at most " +
                           std::to_string(kMaxKeyBytes) + ")");
  }
  for (unsigned char c : key) {
    if (c < 0x21 || c > 0x7e) return InvalidArgument("API key has a byte outside printable ASCII");
  }
  return Status::Ok();
}

Result<std::string_view> ParseBearer(std::string_view v) {
  // Oversized headers are refused before any parsing work.
  if (v.size() > kMaxKeyBytes + 64) return InvalidArgument("Authorization header is too long");
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  v = trim(v);
  constexpr std::string_view kScheme = "bearer";
  if (v.size() > kScheme.size() && (v[kScheme.size()] == ' ' || v[kScheme.size()] == '\t')) {
    bool is_bearer = true;
    for (size_t i = 0; i < kScheme.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(v[i])) != kScheme[i]) is_bearer = false;
    }
    if (is_bearer) v = trim(v.substr(kScheme.size()));
  } else if (v.size() == kScheme.size()) {
    bool only_scheme = true;
    for (size_t i = 0; i < kScheme.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(v[i])) != kScheme[i]) only_scheme = false;
    }
    if (only_scheme) return InvalidArgument("API key is missing");
  }
  PAGODA_RETURN_IF_ERROR(ValidateKeyString(v));
  return v;
}

}  // namespace pagoda::tenancy
