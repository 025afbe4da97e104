// CounterStore: shared rate-limit counters that every gateway process reads
// and writes, so a limit holds across all of them (never limit x replicas).
//
// One Acquire checks and applies a list of rules atomically, all or nothing:
// either every counter stays within its limit after adding its amount and all
// are applied, or none is applied and the answer names the first rule that
// refused. Three kinds of counter:
//   kRequests, kTokens  fixed windows aligned to the epoch
//                       (window_start = floor(now / window_ms) * window_ms);
//                       the counter of a window starts at 0.
//   kConcurrent         live slots; each slot carries a lease (lease_ms) and
//                       stops counting when it expires, so a gateway that
//                       dies holding slots does not leak them forever.
//                       RenewSlots extends a lease for long requests.
// Finish settles token reservations (a signed delta, clamped at 0) in the
// admission's window and releases a slot, in one round trip.
//
// Times are the caller's clock in Unix milliseconds (injectable in tests);
// gateway hosts sharing a store must keep their clocks in sync (NTP).
// Implementations (sqlite_counter_store.h, postgres_counter_store.h,
// redis_counter_store.h) are safe to call from many threads at once. Any
// store failure is an error value (IoError): callers fail closed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace pagoda::tenancy {

enum class CounterKind : int { kRequests = 0, kTokens = 1, kConcurrent = 2 };
const char* CounterKindName(CounterKind kind);

struct CounterRule {
  std::string key;  // e.g. "t:<tenant>|m:<model>"; ids only, never secrets
  CounterKind kind = CounterKind::kRequests;
  int64_t limit = 0;   // >= 0
  int64_t amount = 0;  // >= 0; kConcurrent: 1 takes a slot, 0 only checks
};

struct CounterReading {
  int64_t limit = 0;
  int64_t used = 0;      // after the Acquire when admitted, before it when refused
  int64_t reset_ms = 0;  // end of the window (kRequests, kTokens); 0 for kConcurrent
  int64_t remaining() const { return used >= limit ? 0 : limit - used; }
};

struct AcquireResult {
  bool admitted = false;
  int refused_rule = -1;        // index of the first rule that refused
  int64_t window_start_ms = 0;  // the window the amounts went to
  std::vector<CounterReading> readings;  // one per rule, in rule order
};

// Settle and release in one call; either part may be empty.
struct FinishRequest {
  std::vector<std::string> token_keys;  // kTokens counters to settle
  int64_t window_start_ms = 0;          // the admission's window
  int64_t token_delta = 0;              // actual - reserved; results clamp at 0
  std::vector<std::string> slot_keys;   // kConcurrent counters holding slot_id
  std::string slot_id;
};

struct CounterStoreOptions {
  int64_t window_ms = 60'000;       // kRequests / kTokens window length
  int64_t lease_ms = 600'000;       // kConcurrent slot lease
  int64_t timeout_ms = 5'000;       // SQLite busy_timeout, PostgreSQL lock/statement timeout, Redis I/O timeout
  int pool_size = 8;                // PostgreSQL / Redis connections per store
};

class CounterStore {
 public:
  virtual ~CounterStore() = default;

  // Checks every rule and applies all of them or none. slot_id names the
  // slot taken in every kConcurrent rule with amount 1 (unique per admission).
  virtual Result<AcquireResult> Acquire(const std::vector<CounterRule>& rules, int64_t now_ms,
                                        const std::string& slot_id) = 0;
  virtual Status Finish(const FinishRequest& request) = 0;
  // Extends slot_id's lease in each key to now_ms + lease_ms.
  virtual Status RenewSlots(const std::vector<std::string>& slot_keys, const std::string& slot_id,
                            int64_t now_ms) = 0;
  // Current value: the window holding now_ms, or the live slots.
  virtual Result<int64_t> Used(const std::string& key, CounterKind kind, int64_t now_ms) = 0;
  // "sqlite:/path", "postgresql://host:port/db", "redis://host:port/db"; no passwords.
  virtual std::string Describe() const = 0;

  Status Settle(const std::vector<std::string>& token_keys, int64_t window_start_ms, int64_t delta);
  Status Release(const std::vector<std::string>& slot_keys, const std::string& slot_id);

  const CounterStoreOptions& options() const { return options_; }

 protected:
  explicit CounterStore(const CounterStoreOptions& options) : options_(options) {}
  CounterStoreOptions options_;
};

// "redis://[:password@]host[:port][/db]", "postgresql://..." (or
// "postgres://", any libpq URI), "sqlite:///abs/path", "sqlite:rel/path", or
// a plain file path (SQLite).
Result<std::unique_ptr<CounterStore>> OpenCounterStore(const std::string& url,
                                                       const CounterStoreOptions& options = {});

// Shared helpers for the implementations.
Status ValidateCounterOptions(const CounterStoreOptions& options);
Status ValidateRules(const std::vector<CounterRule>& rules, const std::string& slot_id);
Status ValidateFinish(const FinishRequest& request);
int64_t WindowStart(int64_t now_ms, int64_t window_ms);
// The URL with any password removed ("scheme://user:secret@host" -> "scheme://user@host").
std::string RedactUrlPassword(const std::string& url);

}  // namespace pagoda::tenancy
