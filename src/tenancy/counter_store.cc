#include "tenancy/counter_store.h"

#include <set>
#include <utility>

#include "tenancy/postgres_counter_store.h"
#include "tenancy/redis_counter_store.h"
#include "tenancy/sqlite_counter_store.h"

namespace pagoda::tenancy {
namespace {

constexpr size_t kMaxKeyBytes = 1024;
constexpr size_t kMaxRules = 64;

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

Status ValidateKey(const std::string& key) {
  if (key.empty()) return InvalidArgument("rate limit counter key is empty");
  if (key.size() > kMaxKeyBytes) {
    return InvalidArgument("rate limit counter key is " + std::to_string(key.size()) + " bytes (at most " +
                           std::to_string(kMaxKeyBytes) + ")");
  }
  if (key.find('\0') != std::string::npos) return InvalidArgument("rate limit counter key holds a NUL byte");
  return Status::Ok();
}

}  // namespace

const char* CounterKindName(CounterKind kind) {
  switch (kind) {
    case CounterKind::kRequests: return "requests";
    case CounterKind::kTokens: return "tokens";
    case CounterKind::kConcurrent: return "concurrent";
  }
  return "?";
}

Status CounterStore::Settle(const std::vector<std::string>& token_keys, int64_t window_start_ms, int64_t delta) {
  FinishRequest r;
  r.token_keys = token_keys;
  r.window_start_ms = window_start_ms;
  r.token_delta = delta;
  return Finish(r);
}

Status CounterStore::Release(const std::vector<std::string>& slot_keys, const std::string& slot_id) {
  FinishRequest r;
  r.slot_keys = slot_keys;
  r.slot_id = slot_id;
  return Finish(r);
}

Status ValidateCounterOptions(const CounterStoreOptions& o) {
  if (o.window_ms < 1) return InvalidArgument("rate limit window must be at least 1 ms");
  if (o.lease_ms < 1) return InvalidArgument("concurrency lease must be at least 1 ms");
  if (o.timeout_ms < 1) return InvalidArgument("store timeout must be at least 1 ms");
  if (o.pool_size < 1 || o.pool_size > 1024) return InvalidArgument("store pool size must be 1..1024");
  return Status::Ok();
}

Status ValidateRules(const std::vector<CounterRule>& rules, const std::string& slot_id) {
  if (rules.size() > kMaxRules) {
    return InvalidArgument("at most " + std::to_string(kMaxRules) + " rate limit rules per admission");
  }
  std::set<std::pair<std::string, int>> seen;
  bool takes_slot = false;
  for (const CounterRule& r : rules) {
    PAGODA_RETURN_IF_ERROR(ValidateKey(r.key));
    const int kind = static_cast<int>(r.kind);
    if (kind < 0 || kind > 2) return InvalidArgument("unknown rate limit counter kind");
    if (r.limit < 0) return InvalidArgument("rate limit must not be negative");
    if (r.amount < 0) return InvalidArgument("rate limit amount must not be negative");
    if (r.kind == CounterKind::kConcurrent && r.amount > 1) {
      return InvalidArgument("a concurrency rule takes one slot (amount 0 or 1)");
    }
    if (!seen.insert({r.key, kind}).second) {
      return InvalidArgument(std::string("rate limit rule repeated for one key and kind (") + CounterKindName(r.kind) +
                             ")");
    }
    takes_slot |= r.kind == CounterKind::kConcurrent && r.amount == 1;
  }
  if (takes_slot && slot_id.empty()) return InvalidArgument("a concurrency slot needs a slot id");
  if (slot_id.size() > 128) return InvalidArgument("slot id longer than 128 bytes");
  return Status::Ok();
}

Status ValidateFinish(const FinishRequest& r) {
  for (const std::string& k : r.token_keys) PAGODA_RETURN_IF_ERROR(ValidateKey(k));
  for (const std::string& k : r.slot_keys) PAGODA_RETURN_IF_ERROR(ValidateKey(k));
  if (!r.slot_keys.empty() && r.slot_id.empty()) return InvalidArgument("releasing a slot needs its slot id");
  return Status::Ok();
}

int64_t WindowStart(int64_t now_ms, int64_t window_ms) {
  int64_t q = now_ms / window_ms;
  if (now_ms % window_ms != 0 && now_ms < 0) --q;  // floor for times before the epoch
  return q * window_ms;
}

std::string RedactUrlPassword(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t host_start = scheme + 3;
  const size_t at = url.find('@', host_start);
  const size_t slash = url.find('/', host_start);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return url;
  const size_t colon = url.find(':', host_start);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon) + url.substr(at);
}

Result<std::unique_ptr<CounterStore>> OpenCounterStore(const std::string& url, const CounterStoreOptions& options) {
  PAGODA_RETURN_IF_ERROR(ValidateCounterOptions(options));
  if (url.empty()) return InvalidArgument("counter store URL is empty");
  if (StartsWith(url, "redis://")) return OpenRedisCounterStore(url, options);
  if (StartsWith(url, "postgresql://") || StartsWith(url, "postgres://")) return OpenPostgresCounterStore(url, options);
  if (StartsWith(url, "sqlite://")) return OpenSqliteCounterStore(url.substr(9), options);
  if (StartsWith(url, "sqlite:")) return OpenSqliteCounterStore(url.substr(7), options);
  if (url.find("://") != std::string::npos) {
    return InvalidArgument("unknown counter store scheme in '" + RedactUrlPassword(url) +
                           "' (redis://, postgresql://, sqlite:// or a file path)");
  }
  return OpenSqliteCounterStore(url, options);
}

}  // namespace pagoda::tenancy
