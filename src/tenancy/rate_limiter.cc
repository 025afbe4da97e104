#include "tenancy/rate_limiter.h"

#include <openssl/rand.h>

#include <chrono>
#include <random>
#include <set>
#include <utility>

#include "base/log.h"

namespace pagoda::tenancy {
namespace {

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string NewSlotId() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) {
    thread_local std::mt19937_64 rng(std::random_device{}());
    for (unsigned char& c : b) c = static_cast<unsigned char>(rng());
  }
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += kHex[c >> 4];
    s += kHex[c & 15];
  }
  return s;
}

Status ValidateLimit(const std::optional<int64_t>& v, const char* what) {
  if (v && *v < 0) return InvalidArgument(std::string(what) + " limit must not be negative");
  return Status::Ok();
}

std::string WindowName(int64_t window_ms) { return FormatResetDuration(window_ms); }

// The snapshot for the headers: the refusing rule when it is of this kind,
// otherwise the rule of this kind with the least remaining (ties: smaller limit).
std::optional<LimitSnapshot> MostConstraining(const std::vector<CounterRule>& rules, const AcquireResult& r,
                                              CounterKind kind) {
  std::optional<LimitSnapshot> best;
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].kind != kind) continue;
    const CounterReading& x = r.readings[i];
    LimitSnapshot s{x.limit, x.remaining(), x.reset_ms};
    if (static_cast<int>(i) == r.refused_rule) return s;
    if (!best || s.remaining < best->remaining || (s.remaining == best->remaining && s.limit < best->limit)) best = s;
  }
  return best;
}

RateLimited Refusal(const std::vector<CounterRule>& rules, const std::vector<const ScopeLimits*>& scope_of,
                    const AcquireResult& r, int64_t now_ms, int64_t window_ms) {
  const int i = r.refused_rule;
  const CounterRule& rule = rules[i];
  const CounterReading& x = r.readings[i];
  RateLimited out;
  out.kind = rule.kind;
  out.label = scope_of[i]->label.empty() ? std::string("this key") : scope_of[i]->label;
  out.limit = rule.limit;
  out.used = x.used;
  out.requested = rule.amount;
  out.never_fits = rule.amount > rule.limit;
  // A slot frees when some request ends: no schedule to point at, so 1 s.
  out.retry_after_ms = rule.kind == CounterKind::kConcurrent ? 1000 : std::max<int64_t>(x.reset_ms - now_ms, 1);
  const std::string per = " per " + WindowName(window_ms);
  if (rule.kind == CounterKind::kConcurrent) {
    out.message = "Too many concurrent requests for " + out.label + ": Limit " + std::to_string(out.limit) +
                  ", In flight " + std::to_string(out.used) + ". Please try again when a request finishes.";
  } else if (out.never_fits) {
    out.message = "Request too large for " + out.label + " on tokens" + per + ": Limit " + std::to_string(out.limit) +
                  ", Requested " + std::to_string(out.requested) +
                  ". Reduce the prompt or max_tokens to fit the limit.";
  } else {
    out.message = "Rate limit reached for " + out.label + " on " + CounterKindName(rule.kind) + per + ": Limit " +
                  std::to_string(out.limit) + ", Used " + std::to_string(out.used) + ", Requested " +
                  std::to_string(out.requested) + ". Please try again in " + FormatResetDuration(out.retry_after_ms) +
                  ".";
  }
  return out;
}

}  // namespace

std::string RateLimited::type() const {
  switch (kind) {
    case CounterKind::kRequests: return "requests";
    case CounterKind::kTokens: return "tokens";
    case CounterKind::kConcurrent: return "concurrent_requests";
  }
  return "requests";
}

// ---- Admission ----

Admission::Admission(Admission&& o) noexcept { *this = std::move(o); }

Admission& Admission::operator=(Admission&& o) noexcept {
  if (this != &o) {
    if (!settled_) (void)Settle(observed_.value_or(reserved_));
    limiter_ = o.limiter_;
    token_keys_ = std::move(o.token_keys_);
    slot_keys_ = std::move(o.slot_keys_);
    slot_id_ = std::move(o.slot_id_);
    window_start_ms_ = o.window_start_ms_;
    reserved_ = o.reserved_;
    observed_ = o.observed_;
    lease_renewed_ms_ = o.lease_renewed_ms_;
    settled_ = o.settled_;
    o.settled_ = true;
  }
  return *this;
}

Admission::~Admission() {
  if (settled_) return;
  const int64_t charge = observed_.value_or(reserved_);
  PAGODA_LOG(Warning) << "rate limit admission dropped without Settle; charged " << charge << " of " << reserved_
                      << " reserved tokens" << (observed_ ? " (last observed)" : " (the full reservation)");
  (void)Settle(charge);
}

void Admission::Observe(int64_t tokens_so_far) {
  if (settled_) return;
  observed_ = std::max<int64_t>(tokens_so_far, 0);
  if (slot_keys_.empty()) return;
  const int64_t now = limiter_->Now();
  if (now - lease_renewed_ms_ >= limiter_->store()->options().lease_ms / 2) {
    limiter_->Renew(*this, now);
    lease_renewed_ms_ = now;
  }
}

Status Admission::Settle(int64_t actual_tokens) {
  if (settled_) return FailedPrecondition("rate limit admission already settled");
  if (actual_tokens < 0) actual_tokens = 0;
  settled_ = true;
  FinishRequest r;
  r.token_keys = std::move(token_keys_);
  r.window_start_ms = window_start_ms_;
  r.token_delta = actual_tokens - reserved_;
  r.slot_keys = std::move(slot_keys_);
  r.slot_id = slot_id_;
  return limiter_->Finish(r);
}

// ---- RateLimiter ----

RateLimiter::RateLimiter(CounterStore* store, Options options)
    : store_(store), now_ms_(options.now_ms ? std::move(options.now_ms) : SystemNowMs), max_pending_(options.max_pending) {}

RateLimiter::~RateLimiter() {
  if (pending() == 0) return;
  Status st = FlushPending();
  if (!st.ok()) {
    PAGODA_LOG(Warning) << pending() << " rate limit settlements not applied at shutdown: " << st.ToString();
  }
}

Result<AdmitDecision> RateLimiter::Admit(const AdmitRequest& request) {
  if (request.reserve_tokens < 0) return InvalidArgument("reserved tokens must not be negative");
  const int64_t now = request.now_ms ? *request.now_ms : now_ms_();
  std::vector<CounterRule> rules;
  std::vector<const ScopeLimits*> scope_of;
  std::set<std::string> keys;
  for (const ScopeLimits& s : request.scopes) {
    PAGODA_RETURN_IF_ERROR(ValidateLimit(s.requests, "requests"));
    PAGODA_RETURN_IF_ERROR(ValidateLimit(s.tokens, "tokens"));
    PAGODA_RETURN_IF_ERROR(ValidateLimit(s.concurrent, "concurrent requests"));
    if (!keys.insert(s.key).second) return InvalidArgument("rate limit scope listed twice");
    if (s.requests) rules.push_back({s.key, CounterKind::kRequests, *s.requests, 1});
    if (s.tokens) rules.push_back({s.key, CounterKind::kTokens, *s.tokens, request.reserve_tokens});
    if (s.concurrent) rules.push_back({s.key, CounterKind::kConcurrent, *s.concurrent, 1});
    while (scope_of.size() < rules.size()) scope_of.push_back(&s);
  }
  AdmitDecision d;
  Admission a;
  a.limiter_ = this;
  a.reserved_ = request.reserve_tokens;
  a.lease_renewed_ms_ = now;
  if (rules.empty()) {  // nothing limited: no store round trip
    a.settled_ = false;
    d.admission.emplace(std::move(a));
    return d;
  }
  bool takes_slot = false;
  for (const CounterRule& r : rules) takes_slot |= r.kind == CounterKind::kConcurrent;
  if (takes_slot) a.slot_id_ = NewSlotId();

  if (pending() > 0) (void)FlushPending();
  PAGODA_ASSIGN_OR_RETURN(AcquireResult res, store_->Acquire(rules, now, a.slot_id_));

  const auto req = MostConstraining(rules, res, CounterKind::kRequests);
  const auto tok = MostConstraining(rules, res, CounterKind::kTokens);
  if (!res.admitted) {
    if (res.refused_rule < 0 || res.refused_rule >= static_cast<int>(rules.size())) {
      return Internal("rate limit store refused without naming a rule");
    }
    d.refused = Refusal(rules, scope_of, res, now, store_->options().window_ms);
    d.headers = RateLimitHeaders(req, tok, now, d.refused->retry_after_ms);
    return d;
  }
  a.window_start_ms_ = res.window_start_ms;
  for (const CounterRule& r : rules) {
    if (r.kind == CounterKind::kTokens) a.token_keys_.push_back(r.key);
    if (r.kind == CounterKind::kConcurrent) a.slot_keys_.push_back(r.key);
  }
  a.settled_ = false;
  d.headers = RateLimitHeaders(req, tok, now);
  d.admission.emplace(std::move(a));
  return d;
}

Status RateLimiter::Finish(const FinishRequest& request) {
  if ((request.token_keys.empty() || request.token_delta == 0) && request.slot_keys.empty()) return Status::Ok();
  if (pending() > 0) (void)FlushPending();
  Status st = store_->Finish(request);
  if (st.ok()) return st;
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.size() >= max_pending_) {
    PAGODA_LOG(Error) << "rate limit settlement queue full (" << max_pending_ << "); dropping the oldest";
    pending_.pop_front();
  }
  pending_.push_back(request);
  PAGODA_LOG(Warning) << "rate limit settlement queued for retry: " << st.ToString();
  return st;
}

void RateLimiter::Renew(const Admission& a, int64_t now_ms) {
  Status st = store_->RenewSlots(a.slot_keys_, a.slot_id_, now_ms);
  if (!st.ok()) {
    PAGODA_LOG(Warning) << "concurrency lease not renewed: " << st.ToString();
  }
}

Status RateLimiter::FlushPending() {
  while (true) {
    FinishRequest r;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pending_.empty()) return Status::Ok();
      r = pending_.front();
      pending_.pop_front();
    }
    Status st = store_->Finish(r);
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_front(std::move(r));
      return st;
    }
  }
}

size_t RateLimiter::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

}  // namespace pagoda::tenancy
