// RateLimiter: per-key and per-tenant limits (requests and tokens per window,
// concurrent requests), per model or for all models, enforced through a
// shared CounterStore so every gateway process sees the same counters.
//
// Admit() checks every scope's limits in one atomic store call: all counters
// are charged or none. Tokens are reserved at admission (the caller passes
// prompt tokens + max_tokens) and settled with the real count when the
// request ends, whatever way it ends: Admission::Settle(actual). Settling
// also releases the concurrency slot.
//
// Failure behaviour: when the store fails (down, locked, timed out) Admit
// returns the error (IoError; the gateway answers 503): a request is never
// admitted unmetered. A Settle the store cannot take is queued in memory and
// applied on a later call once the store is back (FlushPending).
//
// Thread-safety: Admit, FlushPending and pending may be called from any
// thread. An Admission belongs to one request; it borrows the RateLimiter,
// which must outlive it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tenancy/counter_store.h"
#include "tenancy/rate_limiter_headers.h"

namespace pagoda::tenancy {

// The limits of one scope: a key or a tenant, on one model or on all models.
// Unset limits are not checked.
struct ScopeLimits {
  std::string key;    // counter key, e.g. "k:<key id>|m:<model>", "t:<tenant>|m:*"; ids only
  std::string label;  // for messages, e.g. "tenant acme on model m"; never a secret
  std::optional<int64_t> requests;    // per window
  std::optional<int64_t> tokens;      // per window
  std::optional<int64_t> concurrent;  // in flight
};

struct AdmitRequest {
  std::vector<ScopeLimits> scopes;
  int64_t reserve_tokens = 0;     // prompt tokens + max_tokens
  std::optional<int64_t> now_ms;  // default: the limiter's clock
};

// Why a request was refused (HTTP 429).
struct RateLimited {
  CounterKind kind = CounterKind::kRequests;
  std::string label;
  int64_t limit = 0;
  int64_t used = 0;
  int64_t requested = 0;
  int64_t retry_after_ms = 0;
  bool never_fits = false;  // requested > limit: waiting does not help
  std::string message;      // OpenAI-style, e.g. "Rate limit reached for requests ..."
  std::string type() const;  // "requests", "tokens", "concurrent_requests"
  std::string ErrorBody() const { return RateLimitErrorBody(message, type()); }
};

class RateLimiter;

// One admitted request's charges. Settle exactly once with the real token
// count (completed, failed or cancelled alike). Dropped unsettled, it settles
// itself with the last Observe()d count, or with the full reservation when
// nothing was observed (an unknown request is never under-charged), releases
// its slot, and logs a warning.
class Admission {
 public:
  Admission(Admission&& other) noexcept;
  Admission& operator=(Admission&& other) noexcept;
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;
  ~Admission();

  // Tokens used so far (streaming). Renews the concurrency lease when half
  // of it has passed.
  void Observe(int64_t tokens_so_far);
  // Charges actual_tokens instead of the reservation and releases the slot.
  // An error means the store did not take it now; it is queued and retried.
  Status Settle(int64_t actual_tokens);

  bool settled() const { return settled_; }
  int64_t reserved_tokens() const { return reserved_; }
  int64_t window_start_ms() const { return window_start_ms_; }

 private:
  friend class RateLimiter;
  Admission() = default;

  RateLimiter* limiter_ = nullptr;
  std::vector<std::string> token_keys_;
  std::vector<std::string> slot_keys_;
  std::string slot_id_;
  int64_t window_start_ms_ = 0;
  int64_t reserved_ = 0;
  std::optional<int64_t> observed_;
  int64_t lease_renewed_ms_ = 0;
  bool settled_ = true;
};

struct AdmitDecision {
  std::optional<Admission> admission;  // when admitted
  std::optional<RateLimited> refused;  // when refused
  std::vector<HttpHeader> headers;     // x-ratelimit-*; retry-after when refused
  bool admitted() const { return admission.has_value(); }
};

class RateLimiter {
 public:
  struct Options {
    std::function<int64_t()> now_ms;  // Unix ms; default: the system clock
    size_t max_pending = 100'000;     // queued settlements kept while the store is away
  };

  // Borrows `store`, which must outlive the limiter.
  explicit RateLimiter(CounterStore* store) : RateLimiter(store, Options()) {}
  RateLimiter(CounterStore* store, Options options);
  ~RateLimiter();

  // Admitted (with an Admission to settle), refused (429 with headers), or an
  // error: InvalidArgument for bad limits, IoError when the store failed.
  Result<AdmitDecision> Admit(const AdmitRequest& request);

  // Applies queued settlements; stops at the first failure.
  Status FlushPending();
  size_t pending() const;

  int64_t Now() const { return now_ms_(); }
  CounterStore* store() const { return store_; }

 private:
  friend class Admission;
  Status Finish(const FinishRequest& request);  // queues it when the store fails
  void Renew(const Admission& admission, int64_t now_ms);

  CounterStore* store_;
  std::function<int64_t()> now_ms_;
  size_t max_pending_;
  mutable std::mutex mu_;
  std::deque<FinishRequest> pending_;
};

}  // namespace pagoda::tenancy
