#include "tenancy/redis_counter_store.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include <openssl/evp.h>

#include "redis/redis_client.h"

namespace pagoda::tenancy {
namespace {

// KEYS[i]: rule i's counter. ARGV: now, lease, window ttl, slot, then
// kind ('r' | 't' | 'c'), limit, amount per rule. Returns {refused, used...}
// with refused the 1-based index of the first rule over its limit, 0 when
// every amount was applied.
constexpr const char* kAcquireLua = R"lua(
local now = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local ttl = ARGV[3]
local slot = ARGV[4]
local used = {}
local refused = 0
for i = 1, #KEYS do
  local b = 4 + 3 * (i - 1)
  local u
  if ARGV[b + 1] == 'c' then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', ARGV[1])
    u = redis.call('ZCARD', KEYS[i])
  else
    u = tonumber(redis.call('GET', KEYS[i]) or '0')
  end
  used[i] = u
  if refused == 0 and u + tonumber(ARGV[b + 3]) > tonumber(ARGV[b + 2]) then refused = i end
end
if refused == 0 then
  for i = 1, #KEYS do
    local b = 4 + 3 * (i - 1)
    local amount = tonumber(ARGV[b + 3])
    if amount > 0 then
      if ARGV[b + 1] == 'c' then
        redis.call('ZADD', KEYS[i], string.format('%d', now + lease), slot)
        redis.call('PEXPIRE', KEYS[i], string.format('%d', math.max(2 * lease, 3600000)))
      else
        redis.call('INCRBY', KEYS[i], ARGV[b + 3])
        redis.call('PEXPIRE', KEYS[i], ttl)
      end
      used[i] = used[i] + amount
    end
  end
end
table.insert(used, 1, refused)
return used
)lua";

// KEYS: ARGV[1] token counters, then slot sets. ARGV: ntok, delta, ttl, slot.
constexpr const char* kFinishLua = R"lua(
local ntok = tonumber(ARGV[1])
local delta = tonumber(ARGV[2])
for i = 1, ntok do
  if delta > 0 then
    redis.call('INCRBY', KEYS[i], ARGV[2])
    if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
  elseif delta < 0 then
    local v = redis.call('GET', KEYS[i])
    if v then
      local nv = tonumber(v) + delta
      if nv < 0 then nv = 0 end
      redis.call('SET', KEYS[i], string.format('%d', nv), 'KEEPTTL')
    end
  end
end
for i = ntok + 1, #KEYS do redis.call('ZREM', KEYS[i], ARGV[4]) end
return 0
)lua";

// KEYS: slot sets. ARGV: expires, slot, set ttl.
constexpr const char* kRenewLua = R"lua(
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', ARGV[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[i], ARGV[3])
end
return 0
)lua";

std::string Sha1Hex(const std::string& s) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), md, &len, EVP_sha1(), nullptr);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    hex += buf;
  }
  return hex;
}

struct Script {
  explicit Script(const char* body) : text(body), sha(Sha1Hex(body)) {}
  std::string text;
  std::string sha;
};

using redis::RedisClient;
using redis::RedisReply;

class RedisCounterStore final : public CounterStore {
 public:
  RedisCounterStore(std::unique_ptr<RedisClient> client, const std::string& url, const CounterStoreOptions& options)
      : CounterStore(options),
        client_(std::move(client)),
        shown_(RedactUrlPassword(url)),
        acquire_(kAcquireLua),
        finish_(kFinishLua),
        renew_(kRenewLua) {}

  Status Check() { return client_->Ping(); }

  Result<AcquireResult> Acquire(const std::vector<CounterRule>& rules, int64_t now_ms,
                                const std::string& slot_id) override {
    PAGODA_RETURN_IF_ERROR(ValidateRules(rules, slot_id));
    AcquireResult out;
    out.window_start_ms = WindowStart(now_ms, options_.window_ms);
    const int64_t reset = out.window_start_ms + options_.window_ms;
    if (rules.empty()) {
      out.admitted = true;
      return out;
    }
    std::vector<std::string> keys, args;
    for (const CounterRule& r : rules) keys.push_back(KeyFor(r.key, r.kind, out.window_start_ms));
    args = {std::to_string(now_ms), std::to_string(options_.lease_ms), std::to_string(WindowTtl(now_ms)), slot_id};
    for (const CounterRule& r : rules) {
      args.push_back(r.kind == CounterKind::kConcurrent ? "c" : r.kind == CounterKind::kTokens ? "t" : "r");
      args.push_back(std::to_string(r.limit));
      args.push_back(std::to_string(r.amount));
    }
    PAGODA_ASSIGN_OR_RETURN(const RedisReply reply, Eval(acquire_, keys, args));
    if (reply.type != RedisReply::Type::kArray || reply.elements.size() != rules.size() + 1) {
      return Internal("rate limit store " + shown_ + ": unexpected acquire reply");
    }
    for (const RedisReply& e : reply.elements) {
      if (e.type != RedisReply::Type::kInteger) {
        return Internal("rate limit store " + shown_ + ": unexpected acquire reply");
      }
    }
    out.refused_rule = static_cast<int>(reply.elements[0].integer) - 1;
    out.admitted = out.refused_rule < 0;
    for (size_t i = 0; i < rules.size(); ++i) {
      out.readings.push_back(
          {rules[i].limit, reply.elements[i + 1].integer, rules[i].kind == CounterKind::kConcurrent ? 0 : reset});
    }
    return out;
  }

  Status Finish(const FinishRequest& r) override {
    PAGODA_RETURN_IF_ERROR(ValidateFinish(r));
    if ((r.token_keys.empty() || r.token_delta == 0) && r.slot_keys.empty()) return Status::Ok();
    std::vector<std::string> keys;
    for (const std::string& k : r.token_keys) keys.push_back(KeyFor(k, CounterKind::kTokens, r.window_start_ms));
    for (const std::string& k : r.slot_keys) keys.push_back(KeyFor(k, CounterKind::kConcurrent, 0));
    const std::vector<std::string> args = {std::to_string(r.token_keys.size()), std::to_string(r.token_delta),
                                           std::to_string(WindowTtl(r.window_start_ms)), r.slot_id};
    return Eval(finish_, keys, args).status();
  }

  Status RenewSlots(const std::vector<std::string>& slot_keys, const std::string& slot_id, int64_t now_ms) override {
    if (slot_keys.empty()) return Status::Ok();
    std::vector<std::string> keys;
    for (const std::string& k : slot_keys) keys.push_back(KeyFor(k, CounterKind::kConcurrent, 0));
    return Eval(renew_, keys,
                {std::to_string(now_ms + options_.lease_ms), slot_id,
                 std::to_string(std::max<int64_t>(2 * options_.lease_ms, 3'600'000))})
        .status();
  }

  Result<int64_t> Used(const std::string& key, CounterKind kind, int64_t now_ms) override {
    if (kind == CounterKind::kConcurrent) {
      PAGODA_ASSIGN_OR_RETURN(
          const RedisReply r,
          client_->CommandOk({"ZCOUNT", KeyFor(key, kind, 0), "(" + std::to_string(now_ms), "+inf"}));
      return r.integer;
    }
    PAGODA_ASSIGN_OR_RETURN(const RedisReply r,
                            client_->CommandOk({"GET", KeyFor(key, kind, WindowStart(now_ms, options_.window_ms))}));
    if (r.type != RedisReply::Type::kBytes) return int64_t{0};
    try {
      return static_cast<int64_t>(std::stoll(r.bytes));
    } catch (...) {
      return Internal("rate limit store " + shown_ + ": counter is not a number");
    }
  }

  std::string Describe() const override { return shown_; }

 private:
  static std::string KeyFor(const std::string& key, CounterKind kind, int64_t window_start) {
    switch (kind) {
      case CounterKind::kRequests: return "pagoda:rl:" + key + ":r:" + std::to_string(window_start);
      case CounterKind::kTokens: return "pagoda:rl:" + key + ":t:" + std::to_string(window_start);
      case CounterKind::kConcurrent: return "pagoda:rl:" + key + ":c";
    }
    return key;
  }

  // A window key lives until the end of the next window (late settlements
  // still land), and at least a minute so a slow caller never loses one early.
  int64_t WindowTtl(int64_t now_ms) const {
    const int64_t end_of_next = WindowStart(now_ms, options_.window_ms) + 2 * options_.window_ms;
    return std::max<int64_t>(end_of_next - now_ms, 60'000);
  }

  // EVALSHA, and EVAL (which loads the script into the server's cache for
  // the next EVALSHA) when the server does not know it: after a restart or
  // SCRIPT FLUSH. Any other error reply is an IoError.
  Result<RedisReply> Eval(const Script& script, const std::vector<std::string>& keys,
                          const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"EVALSHA", script.sha, std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    PAGODA_ASSIGN_OR_RETURN(RedisReply reply, client_->Command(argv));
    if (reply.is_error() && reply.bytes.rfind("NOSCRIPT", 0) == 0) {
      argv[0] = "EVAL";
      argv[1] = script.text;
      return client_->CommandOk(argv);
    }
    if (reply.is_error()) return IoError("rate limit store " + shown_ + ": EVALSHA: " + reply.bytes);
    return reply;
  }

  const std::unique_ptr<RedisClient> client_;
  const std::string shown_;
  const Script acquire_, finish_, renew_;
};

}  // namespace

Result<std::unique_ptr<CounterStore>> OpenRedisCounterStore(const std::string& url,
                                                            const CounterStoreOptions& options) {
  PAGODA_RETURN_IF_ERROR(ValidateCounterOptions(options));
  redis::RedisClientOptions o;
  o.name = "rate limit store";
  o.pool_size = options.pool_size;
  o.connect_timeout_ms = options.timeout_ms;
  o.io_timeout_ms = options.timeout_ms;
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<RedisClient> client, RedisClient::Create(url, o));
  auto store = std::make_unique<RedisCounterStore>(std::move(client), url, options);
  PAGODA_RETURN_IF_ERROR(store->Check());
  return std::unique_ptr<CounterStore>(std::move(store));
}

}  // namespace pagoda::tenancy
