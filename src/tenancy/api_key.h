// API key secrets: generation, hashing, constant-time comparison and the
// rules for a key string taken from a request. The store only ever sees the
// hash; the secret is shown once, by whoever called GenerateKey.
//
// Secret format: "pgd-" + base64url(32 random bytes from OpenSSL RAND_bytes),
// 47 characters, 256 bits of entropy. Public id: "key_" + 16 hex digits.
// Hash: hex SHA-256 of the secret, or hex HMAC-SHA256(pepper, secret) when the
// deployment configures a pepper (a secret kept outside the database, so a
// leaked database alone cannot be used to test guesses offline).
//
// Error messages never contain the key string.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace pagoda::tenancy {

constexpr size_t kMaxKeyBytes = 256;
constexpr std::string_view kKeyPrefix = "pgd-";

struct GeneratedKey {
  std::string secret;  // show once, never store, never log
  std::string id;      // public
};

// IoError when the OpenSSL random generator fails.
Result<GeneratedKey> GenerateKey();
// "<prefix><hex of `random_bytes` random bytes>" for ids ("ten_", "key_", "req_").
Result<std::string> RandomId(std::string_view prefix, size_t random_bytes = 8);

// 64 lowercase hex digits. `pepper` empty = plain SHA-256.
std::string HashKey(std::string_view secret, std::string_view pepper = {});

// Constant-time equality of two hashes (CRYPTO_memcmp); false when the sizes differ.
bool HashesEqual(std::string_view a, std::string_view b);

// The key from an Authorization header value ("Bearer <key>", scheme
// case-insensitive) or from a bare key (x-api-key). InvalidArgument when it is
// empty, longer than kMaxKeyBytes or has a byte outside printable ASCII
// (0x21..0x7e); the message names the rule, never the key.
Result<std::string_view> ParseBearer(std::string_view header_value);
Status ValidateKeyString(std::string_view key);

}  // namespace pagoda::tenancy
