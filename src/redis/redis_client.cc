#include "redis/redis_client.h"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <limits>
#include <mutex>
#include <utility>

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <sys/time.h>

namespace pagoda::redis {
namespace {

using Clock = std::chrono::steady_clock;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;
struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

// hiredis sends with write(2), so writing to a connection the server has
// reset raises SIGPIPE, whose default action ends the process. The guard
// blocks SIGPIPE on this thread for one command and discards one raised
// meanwhile (a thread-directed signal, so it stays pending here).
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{};
        while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

timeval Timeval(int64_t ms) {
  return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Decimal digits only, within [lo, hi].
bool ParseInt(std::string_view s, int lo, int hi, int* out) {
  if (s.empty()) return false;
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s[0] == '-' || s[0] == '+' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

RedisReply Convert(const redisReply& r) {
  RedisReply out;
  switch (r.type) {
    case REDIS_REPLY_NIL:
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r.integer;
      break;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.type = r.type == REDIS_REPLY_STRING   ? RedisReply::Type::kBytes
                 : r.type == REDIS_REPLY_STATUS ? RedisReply::Type::kStatus
                                                : RedisReply::Type::kError;
      if (r.str != nullptr) out.bytes.assign(r.str, r.len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r.elements);
      for (size_t i = 0; i < r.elements; ++i) out.elements.push_back(Convert(*r.element[i]));
      break;
    default:  // RESP3 types; this client speaks RESP2
      out.type = RedisReply::Type::kError;
      out.bytes = "unsupported reply type " + std::to_string(r.type);
      break;
  }
  return out;
}

// One command on one connection; null (c->err set) when it failed.
Reply Send(redisContext* c, std::span<const std::string_view> argv) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (std::string_view a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  return Reply(static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), ptrs.data(), lens.data())));
}

std::vector<std::string_view> Views(const std::vector<std::string>& argv) {
  return std::vector<std::string_view>(argv.begin(), argv.end());
}

}  // namespace

Result<RedisAddress> ParseRedisUrl(const std::string& url) {
  const std::string bad = "bad Redis URL '" + RedactRedisUrl(url) + "' (redis://[:password@]host[:port][/db])";
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
  if (slash != std::string::npos && slash + 1 < rest.size() &&
      !ParseInt(std::string_view(rest).substr(slash + 1), 0, std::numeric_limits<int>::max(), &a.db)) {
    return InvalidArgument(bad);
  }
  std::string_view port;
  if (!hostport.empty() && hostport[0] == '[') {  // [IPv6]:port
    const size_t close = hostport.find(']');
    if (close == std::string::npos || close == 1) return InvalidArgument(bad);
    const std::string_view after = std::string_view(hostport).substr(close + 1);
    if (!after.empty() && after[0] != ':') return InvalidArgument(bad);
    if (!after.empty()) port = after.substr(1);
    if (!after.empty() && port.empty()) return InvalidArgument(bad);
    a.host = hostport.substr(1, close - 1);
  } else {
    const size_t colon = hostport.rfind(':');
    if (colon != std::string::npos) {
      port = std::string_view(hostport).substr(colon + 1);
      if (port.empty()) return InvalidArgument(bad);
      hostport.resize(colon);
    }
    if (hostport.find(':') != std::string::npos) return InvalidArgument(bad);  // IPv6 needs brackets
    if (!hostport.empty()) a.host = hostport;
  }
  if (!port.empty() && !ParseInt(port, 1, 65535, &a.port)) return InvalidArgument(bad);
  return a;
}

std::string RedactRedisUrl(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t start = scheme + 3;
  const size_t at = url.rfind('@');  // as ParseRedisUrl splits the credentials
  if (at == std::string::npos || at < start) return url;
  const size_t colon = url.find(':', start);
  const size_t cut = colon != std::string::npos && colon < at ? colon : start;  // keep a user name
  return url.substr(0, cut) + url.substr(at);
}

struct RedisClient::Impl {
  RedisAddress address;
  std::string shown;  // the URL without its password
  RedisClientOptions options;

  std::mutex mu;
  std::condition_variable cv;  // a connection came back, or a slot opened
  std::vector<Context> idle;
  int open = 0;                          // connections idle or in use
  std::atomic<int64_t> down_until_ns{0};  // steady clock; commands fail at once before it
  std::string down_why;                  // under mu

  std::string Prefix() const { return options.name + " " + shown + ": "; }
  Result<RedisReply> Run(std::span<const std::string_view> argv);
  Status Take(Context* out, bool* reused);
  std::string Setup(redisContext* c);
  void Give(Context c);
  void Release();
  void DropIdle();
  void MarkDown(const std::string& why);
};

Result<RedisReply> RedisClient::Impl::Run(std::span<const std::string_view> argv) {
  PAGODA_CHECK(!argv.empty()) << "a Redis command needs a name";
  const std::string name(argv[0]);
  SigpipeGuard guard;
  for (int attempt = 0;; ++attempt) {
    if (NowNs() < down_until_ns.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(mu);
      return IoError(Prefix() + name + ": unreachable, retrying within " + std::to_string(options.retry_after_ms) +
                     " ms (" + down_why + ")");
    }
    Context c;
    bool reused = false;
    PAGODA_RETURN_IF_ERROR(Take(&c, &reused));
    const Reply r = Send(c.get(), argv);
    const int err = errno;
    if (r) {
      RedisReply out = Convert(*r);
      Give(std::move(c));
      return out;
    }
    const bool timed_out = c->err == REDIS_ERR_IO && (err == EAGAIN || err == EWOULDBLOCK);
    const std::string why = timed_out ? "timed out after " + std::to_string(options.io_timeout_ms) + " ms"
                            : c->errstr[0] != '\0' ? std::string(c->errstr)
                                                   : std::string("connection lost");
    c.reset();
    Release();
    DropIdle();  // the server probably went away: the other idle connections are dead too
    // A pooled connection may have been closed by a server restart or an
    // idle timeout: send once more on a fresh one. Not after a timeout, when
    // the server may be running the command (and a retry would double the wait).
    if (reused && !timed_out && attempt == 0) continue;
    MarkDown(why);
    return IoError(Prefix() + name + ": " + why);
  }
}

Status RedisClient::Impl::Take(Context* out, bool* reused) {
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !idle.empty() || open < options.pool_size; });
    if (!idle.empty()) {
      *out = std::move(idle.back());
      idle.pop_back();
      *reused = true;
      return Status::Ok();
    }
    ++open;
  }
  *reused = false;
  Context c(redisConnectWithTimeout(address.host.c_str(), address.port, Timeval(options.connect_timeout_ms)));
  std::string err;
  if (!c) {
    err = "out of memory";
  } else if (c->err) {
    err = c->errstr;
  } else if (redisSetTimeout(c.get(), Timeval(options.io_timeout_ms)) != REDIS_OK) {
    err = "cannot set the I/O timeout";
  } else {
    err = Setup(c.get());
  }
  if (!err.empty()) {
    c.reset();
    Release();
    MarkDown(err);
    return IoError(Prefix() + "connect: " + err);
  }
  *out = std::move(c);
  return Status::Ok();
}

// AUTH and SELECT on a new connection; "" on success.
std::string RedisClient::Impl::Setup(redisContext* c) {
  auto run = [&](const std::vector<std::string>& argv) -> std::string {
    const std::vector<std::string_view> views = Views(argv);
    const Reply r = Send(c, views);
    if (!r) return c->errstr[0] != '\0' ? c->errstr : "connection lost";
    if (r->type == REDIS_REPLY_ERROR) return argv[0] + ": " + std::string(r->str, r->len);
    return "";
  };
  if (!address.password.empty()) {
    const std::string err =
        address.user.empty() ? run({"AUTH", address.password}) : run({"AUTH", address.user, address.password});
    if (!err.empty()) return "AUTH failed";  // the reply names nothing secret, but say no more
  }
  return address.db != 0 ? run({"SELECT", std::to_string(address.db)}) : "";
}

void RedisClient::Impl::Give(Context c) {
  std::lock_guard<std::mutex> lock(mu);
  idle.push_back(std::move(c));
  cv.notify_one();
}

void RedisClient::Impl::Release() {
  std::lock_guard<std::mutex> lock(mu);
  --open;
  cv.notify_one();
}

void RedisClient::Impl::DropIdle() {
  std::vector<Context> dead;
  {
    std::lock_guard<std::mutex> lock(mu);
    dead.swap(idle);
    open -= static_cast<int>(dead.size());
    cv.notify_all();
  }
}  // closed here, outside the lock

void RedisClient::Impl::MarkDown(const std::string& why) {
  if (options.retry_after_ms <= 0) return;
  std::lock_guard<std::mutex> lock(mu);
  down_why = why;
  down_until_ns.store(NowNs() + options.retry_after_ms * 1'000'000, std::memory_order_relaxed);
}

Result<std::unique_ptr<RedisClient>> RedisClient::Create(const std::string& url, const RedisClientOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(RedisAddress address, ParseRedisUrl(url));
  if (options.pool_size < 1) return InvalidArgument("Redis client: pool_size must be >= 1");
  if (options.connect_timeout_ms < 1 || options.io_timeout_ms < 1) {
    return InvalidArgument("Redis client: timeouts must be >= 1 ms");
  }
  if (options.retry_after_ms < 0) return InvalidArgument("Redis client: retry_after_ms must be >= 0");
  auto impl = std::make_unique<Impl>();
  impl->address = std::move(address);
  impl->shown = RedactRedisUrl(url);
  impl->options = options;
  return std::unique_ptr<RedisClient>(new RedisClient(std::move(impl)));
}

RedisClient::RedisClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RedisClient::~RedisClient() = default;

Result<RedisReply> RedisClient::Command(std::span<const std::string_view> argv) { return impl_->Run(argv); }

Result<RedisReply> RedisClient::Command(const std::vector<std::string>& argv) {
  const std::vector<std::string_view> views = Views(argv);
  return impl_->Run(views);
}

Result<RedisReply> RedisClient::CommandOk(std::span<const std::string_view> argv) {
  Result<RedisReply> r = impl_->Run(argv);
  if (r.ok() && r->is_error()) return IoError(impl_->Prefix() + std::string(argv[0]) + ": " + r->bytes);
  return r;
}

Result<RedisReply> RedisClient::CommandOk(const std::vector<std::string>& argv) {
  const std::vector<std::string_view> views = Views(argv);
  return CommandOk(std::span<const std::string_view>(views));
}

Status RedisClient::Ping() {
  PAGODA_ASSIGN_OR_RETURN(RedisReply r, CommandOk(std::vector<std::string>{"PING"}));
  if (r.type != RedisReply::Type::kStatus || r.bytes != "PONG") {
    return IoError(impl_->Prefix() + "PING: unexpected reply '" + r.bytes + "'");
  }
  return Status::Ok();
}

bool RedisClient::backing_off() const { return NowNs() < impl_->down_until_ns.load(std::memory_order_relaxed); }

const std::string& RedisClient::url() const { return impl_->shown; }

}  // namespace pagoda::redis
