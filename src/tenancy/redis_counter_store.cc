#include "tenancy/redis_counter_store.h"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <utility>
#include <vector>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

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

constexpr int kAttempts = 2;  // a connection the server dropped is reopened once

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

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;
struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

struct RedisAddress {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  std::string user, password;
};

Result<RedisAddress> ParseRedisUrl(const std::string& url) {
  const std::string bad = "bad Redis URL '" + RedactUrlPassword(url) + "' (redis://[:password@]host[:port][/db])";
  if (url.rfind("redis://", 0) != 0) return InvalidArgument(bad);
  RedisAddress a;
  std::string rest = url.substr(8);
  const size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    const std::string cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const size_t colon = cred.find(':');
    a.user = colon == std::string::npos ? "" : cred.substr(0, colon);
    a.password = colon == std::string::npos ? cred : cred.substr(colon + 1);
  }
  const size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos && slash + 1 < rest.size()) {
    try {
      size_t used = 0;
      a.db = std::stoi(rest.substr(slash + 1), &used);
      if (used != rest.size() - slash - 1 || a.db < 0) return InvalidArgument(bad);
    } catch (...) {
      return InvalidArgument(bad);
    }
  }
  const size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']') == std::string::npos) {
    try {
      size_t used = 0;
      a.port = std::stoi(hostport.substr(colon + 1), &used);
      if (used != hostport.size() - colon - 1 || a.port <= 0 || a.port > 65535) return InvalidArgument(bad);
    } catch (...) {
      return InvalidArgument(bad);
    }
    hostport = hostport.substr(0, colon);
  }
  if (!hostport.empty()) a.host = hostport;
  return a;
}

class RedisCounterStore final : public CounterStore {
 public:
  RedisCounterStore(RedisAddress address, const std::string& url, const CounterStoreOptions& options)
      : CounterStore(options),
        address_(std::move(address)),
        shown_(RedactUrlPassword(url)),
        acquire_(kAcquireLua),
        finish_(kFinishLua),
        renew_(kRenewLua) {}

  Status Check() {
    Reply r;
    return Command({"PING"}, &r);
  }

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
    Reply reply;
    PAGODA_RETURN_IF_ERROR(Eval(acquire_, keys, args, &reply));
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != rules.size() + 1) {
      return Internal("rate limit store " + shown_ + ": unexpected acquire reply");
    }
    for (size_t i = 0; i <= rules.size(); ++i) {
      if (reply->element[i]->type != REDIS_REPLY_INTEGER) {
        return Internal("rate limit store " + shown_ + ": unexpected acquire reply");
      }
    }
    out.refused_rule = static_cast<int>(reply->element[0]->integer) - 1;
    out.admitted = out.refused_rule < 0;
    for (size_t i = 0; i < rules.size(); ++i) {
      out.readings.push_back(
          {rules[i].limit, reply->element[i + 1]->integer, rules[i].kind == CounterKind::kConcurrent ? 0 : reset});
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
    Reply reply;
    return Eval(finish_, keys, args, &reply);
  }

  Status RenewSlots(const std::vector<std::string>& slot_keys, const std::string& slot_id, int64_t now_ms) override {
    if (slot_keys.empty()) return Status::Ok();
    std::vector<std::string> keys;
    for (const std::string& k : slot_keys) keys.push_back(KeyFor(k, CounterKind::kConcurrent, 0));
    Reply reply;
    return Eval(renew_, keys,
                {std::to_string(now_ms + options_.lease_ms), slot_id,
                 std::to_string(std::max<int64_t>(2 * options_.lease_ms, 3'600'000))},
                &reply);
  }

  Result<int64_t> Used(const std::string& key, CounterKind kind, int64_t now_ms) override {
    Reply r;
    if (kind == CounterKind::kConcurrent) {
      PAGODA_RETURN_IF_ERROR(
          Command({"ZCOUNT", KeyFor(key, kind, 0), "(" + std::to_string(now_ms), "+inf"}, &r));
      return static_cast<int64_t>(r->integer);
    }
    PAGODA_RETURN_IF_ERROR(Command({"GET", KeyFor(key, kind, WindowStart(now_ms, options_.window_ms))}, &r));
    if (r->type != REDIS_REPLY_STRING) return int64_t{0};
    try {
      return static_cast<int64_t>(std::stoll(std::string(r->str, r->len)));
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

  Status Eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string>& args,
              Reply* out) {
    std::vector<std::string> argv = {"EVALSHA", script.sha, std::to_string(keys.size())};
    argv.insert(argv.end(), keys.begin(), keys.end());
    argv.insert(argv.end(), args.begin(), args.end());
    PAGODA_RETURN_IF_ERROR(Command(argv, out, /*allow_noscript=*/true));
    if ((*out)->type == REDIS_REPLY_ERROR && std::string((*out)->str, (*out)->len).rfind("NOSCRIPT", 0) == 0) {
      argv[0] = "EVAL";
      argv[1] = script.text;  // loads it into the script cache for the next EVALSHA
      PAGODA_RETURN_IF_ERROR(Command(argv, out));
    }
    return Status::Ok();
  }

  // Runs one command on a pooled connection; a connection that failed is
  // dropped and the command retried once on a new one. An error reply is an
  // IoError (except NOSCRIPT when allowed, which the caller handles).
  Status Command(const std::vector<std::string>& argv, Reply* out, bool allow_noscript = false) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    for (const std::string& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    std::string last;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      Context c;
      Status st = Take(&c);
      if (!st.ok()) return st;
      Reply r(static_cast<redisReply*>(
          redisCommandArgv(c.get(), static_cast<int>(argv.size()), ptrs.data(), lens.data())));
      if (!r) {
        last = c->errstr[0] ? c->errstr : "connection lost";
        Drop();
        continue;
      }
      Give(std::move(c));
      if (r->type == REDIS_REPLY_ERROR) {
        const std::string msg(r->str, r->len);
        if (allow_noscript && msg.rfind("NOSCRIPT", 0) == 0) {
          *out = std::move(r);
          return Status::Ok();
        }
        return IoError("rate limit store " + shown_ + ": " + argv[0] + ": " + msg);
      }
      *out = std::move(r);
      return Status::Ok();
    }
    return IoError("rate limit store " + shown_ + ": " + argv[0] + ": " + last);
  }

  Status Take(Context* out) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !idle_.empty() || open_ < options_.pool_size; });
      if (!idle_.empty()) {
        *out = std::move(idle_.back());
        idle_.pop_back();
        return Status::Ok();
      }
      ++open_;
    }
    timeval tv{static_cast<time_t>(options_.timeout_ms / 1000),
               static_cast<suseconds_t>((options_.timeout_ms % 1000) * 1000)};
    Context c(redisConnectWithTimeout(address_.host.c_str(), address_.port, tv));
    std::string err;
    if (!c) {
      err = "out of memory";
    } else if (c->err) {
      err = c->errstr;
    } else if (redisSetTimeout(c.get(), tv) != REDIS_OK) {
      err = "cannot set the I/O timeout";
    } else {
      err = Setup(c.get());
    }
    if (!err.empty()) {
      Drop();
      return IoError("rate limit store " + shown_ + ": connect: " + err);
    }
    *out = std::move(c);
    return Status::Ok();
  }

  // AUTH and SELECT on a new connection; "" on success.
  std::string Setup(redisContext* c) {
    auto run = [&](const std::vector<std::string>& argv) -> std::string {
      std::vector<const char*> ptrs;
      std::vector<size_t> lens;
      for (const std::string& a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
      }
      Reply r(static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data())));
      if (!r) return c->errstr[0] ? c->errstr : "connection lost";
      if (r->type == REDIS_REPLY_ERROR) return argv[0] + ": " + std::string(r->str, r->len);
      return "";
    };
    std::string err;
    if (!address_.password.empty()) {
      err = address_.user.empty() ? run({"AUTH", address_.password}) : run({"AUTH", address_.user, address_.password});
      if (!err.empty()) return "AUTH failed";  // the reply may echo nothing secret, but say no more
    }
    if (address_.db != 0) err = run({"SELECT", std::to_string(address_.db)});
    return err;
  }

  void Give(Context c) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(std::move(c));
    cv_.notify_one();
  }
  void Drop() {
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
    cv_.notify_one();
  }

  const RedisAddress address_;
  const std::string shown_;
  const Script acquire_, finish_, renew_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Context> idle_;
  int open_ = 0;
};

}  // namespace

Result<std::unique_ptr<CounterStore>> OpenRedisCounterStore(const std::string& url,
                                                            const CounterStoreOptions& options) {
  PAGODA_RETURN_IF_ERROR(ValidateCounterOptions(options));
  PAGODA_ASSIGN_OR_RETURN(RedisAddress address, ParseRedisUrl(url));
  auto store = std::make_unique<RedisCounterStore>(std::move(address), url, options);
  PAGODA_RETURN_IF_ERROR(store->Check());
  return std::unique_ptr<CounterStore>(std::move(store));
}

}  // namespace pagoda::tenancy
