// RedisClient: a small synchronous Redis client shared by the layers that
// keep state in Redis (tenancy's rate-limit counters, the KV cache's shared
// tier). It owns a pool of connections to one server, opened on demand with
// a connect timeout, an I/O timeout, AUTH and SELECT from the URL, and
// reopened after the server went away; every command is binary-safe. Replies
// come back as RedisReply values: no caller sees hiredis.
//
// Thread-safe: any thread may call Command; a call waits for a free
// connection when all `pool_size` are busy, and for at most the timeouts
// once it has one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::redis {

// Where a URL points: "redis://[[user]:password@]host[:port][/db]".
struct RedisAddress {
  std::string host = "127.0.0.1";  // an IPv6 address without its brackets
  int port = 6379;
  int db = 0;
  std::string user;      // empty: AUTH with the password only
  std::string password;  // empty: no AUTH
};

// InvalidArgument (naming the URL without its password) when it does not
// parse. "redis://" alone is 127.0.0.1:6379, database 0.
Result<RedisAddress> ParseRedisUrl(const std::string& url);

// The URL with its password removed ("redis://:pw@h:1/0" -> "redis://@h:1/0"),
// for errors and logs.
std::string RedactRedisUrl(const std::string& url);

// One reply, as the server sent it (RESP2).
struct RedisReply {
  enum class Type { kNil, kInteger, kBytes, kStatus, kError, kArray };
  Type type = Type::kNil;
  int64_t integer = 0;               // kInteger
  std::string bytes;                 // kBytes (binary-safe); the text of kStatus and kError
  std::vector<RedisReply> elements;  // kArray

  bool is_nil() const { return type == Type::kNil; }
  bool is_error() const { return type == Type::kError; }
};

struct RedisClientOptions {
  std::string name = "Redis";          // starts every error: "<name> <redacted url>: ..."
  int pool_size = 4;                   // connections at most
  int64_t connect_timeout_ms = 5'000;
  int64_t io_timeout_ms = 5'000;       // per read or write of a command
  // After the server failed to answer (connect refused or timed out, I/O
  // timeout, a fresh connection lost), every command fails at once, without
  // touching the network, for this long; 0 tries the server on every call.
  int64_t retry_after_ms = 0;
};

class RedisClient {
 public:
  // Parses the URL and checks the options; opens no connection (the first
  // command does). InvalidArgument on a bad URL or option.
  static Result<std::unique_ptr<RedisClient>> Create(const std::string& url, const RedisClientOptions& options = {});
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Runs one command (argv[0] is its name). An error reply (wrong type,
  // NOSCRIPT, ...) is a value of type kError: the server answered. IoError
  // when it did not: cannot connect, AUTH or SELECT failed, timed out, the
  // connection was lost (a pooled connection the server dropped is reopened
  // and the command sent again once, unless it timed out), or the client is
  // in its retry_after_ms pause.
  Result<RedisReply> Command(const std::vector<std::string>& argv);
  Result<RedisReply> Command(std::span<const std::string_view> argv);
  // As Command, but an error reply is an IoError naming the command.
  Result<RedisReply> CommandOk(const std::vector<std::string>& argv);
  Result<RedisReply> CommandOk(std::span<const std::string_view> argv);

  // PING; Ok when the server answers PONG.
  Status Ping();
  // Whether commands are failing at once now (retry_after_ms after a failure).
  bool backing_off() const;
  // The URL without its password.
  const std::string& url() const;

 private:
  struct Impl;
  explicit RedisClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::redis
