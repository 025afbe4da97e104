// RateLimiter over every backend: limits per key and tenant, token
// reservations settled to the real usage of completed, failed and cancelled
// requests, dropped admissions, concurrency, the 429 answer and its headers,
// and failing closed while the store is away.
#include "tenancy/rate_limiter.h"

#include <atomic>
#include <map>

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "tenancy/counter_store_backends.h"
#include "tenancy/sqlite_counter_store.h"

namespace pagoda::tenancy {
namespace {

using testing::Backend;
using testing::kT0;

std::map<std::string, std::string> HeaderMap(const std::vector<HttpHeader>& hs) {
  std::map<std::string, std::string> m;
  for (const HttpHeader& h : hs) m[h.name] = h.value;
  return m;
}

ScopeLimits Scope(const std::string& key, std::optional<int64_t> rpm, std::optional<int64_t> tpm,
                 std::optional<int64_t> conc = std::nullopt) {
  ScopeLimits s;
  s.key = key;
  s.label = key;
  s.requests = rpm;
  s.tokens = tpm;
  s.concurrent = conc;
  return s;
}

class RateLimiterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(GetParam());
    if (!backend_->ok()) GTEST_SKIP() << backend_->why();
    store_ = backend_->Open(options_);
    ASSERT_TRUE(store_);
    RateLimiter::Options o;
    o.now_ms = [this] { return now_.load(); };
    limiter_ = std::make_unique<RateLimiter>(store_.get(), o);
  }
  void TearDown() override { limiter_.reset(); }

  AdmitDecision Admit(std::vector<ScopeLimits> scopes, int64_t reserve) {
    AdmitRequest r;
    r.scopes = std::move(scopes);
    r.reserve_tokens = reserve;
    auto d = limiter_->Admit(r);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? std::move(d).value() : AdmitDecision{};
  }
  int64_t Used(const std::string& key, CounterKind kind) { return *store_->Used(key, kind, now_.load()); }

  CounterStoreOptions options_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<CounterStore> store_;
  std::unique_ptr<RateLimiter> limiter_;
  std::atomic<int64_t> now_{kT0 + 15'000};
};

TEST_P(RateLimiterTest, AdmitsUpToTheRequestLimitThenAnswers429WithHeaders) {
  for (int i = 0; i < 3; ++i) {
    AdmitDecision d = Admit({Scope("k:a|m:x", 3, 1000)}, 10);
    ASSERT_TRUE(d.admitted());
    auto h = HeaderMap(d.headers);
    EXPECT_EQ(h["x-ratelimit-limit-requests"], "3");
    EXPECT_EQ(h["x-ratelimit-remaining-requests"], std::to_string(2 - i));
    EXPECT_EQ(h["x-ratelimit-reset-requests"], "45s");
    EXPECT_EQ(h["x-ratelimit-limit-tokens"], "1000");
    EXPECT_EQ(h["x-ratelimit-remaining-tokens"], std::to_string(1000 - 10 * (i + 1)));
    EXPECT_EQ(h.count("retry-after"), 0u);
    ASSERT_TRUE(d.admission->Settle(10).ok());
  }
  AdmitDecision d = Admit({Scope("k:a|m:x", 3, 1000)}, 10);
  ASSERT_FALSE(d.admitted());
  ASSERT_TRUE(d.refused);
  EXPECT_EQ(d.refused->kind, CounterKind::kRequests);
  EXPECT_EQ(d.refused->limit, 3);
  EXPECT_EQ(d.refused->used, 3);
  EXPECT_EQ(d.refused->retry_after_ms, 45'000);
  auto h = HeaderMap(d.headers);
  EXPECT_EQ(h["retry-after"], "45");
  EXPECT_EQ(h["x-ratelimit-remaining-requests"], "0");
  auto body = nlohmann::json::parse(d.refused->ErrorBody());
  EXPECT_EQ(body["error"]["type"], "requests");
  EXPECT_EQ(body["error"]["code"], "rate_limit_exceeded");
  EXPECT_NE(d.refused->message.find("Limit 3, Used 3, Requested 1"), std::string::npos) << d.refused->message;
  EXPECT_NE(d.refused->message.find("try again in 45s"), std::string::npos) << d.refused->message;
}

TEST_P(RateLimiterTest, SettlesCompletedFailedAndCancelledRequestsToTheirRealUsage) {
  const std::vector<ScopeLimits> scopes = {Scope("k:s|m:x", 100, 100'000), Scope("t:s|m:*", 100, 100'000)};
  AdmitDecision completed = Admit(scopes, 1000);
  AdmitDecision failed = Admit(scopes, 1000);
  AdmitDecision cancelled = Admit(scopes, 1000);
  ASSERT_TRUE(completed.admitted() && failed.admitted() && cancelled.admitted());
  EXPECT_EQ(Used("t:s|m:*", CounterKind::kTokens), 3000);
  ASSERT_TRUE(completed.admission->Settle(120).ok());
  ASSERT_TRUE(failed.admission->Settle(0).ok());
  cancelled.admission->Observe(20);
  ASSERT_TRUE(cancelled.admission->Settle(37).ok());
  EXPECT_EQ(Used("k:s|m:x", CounterKind::kTokens), 157);
  EXPECT_EQ(Used("t:s|m:*", CounterKind::kTokens), 157);
  EXPECT_EQ(Used("t:s|m:*", CounterKind::kRequests), 3);
  EXPECT_EQ(limiter_->pending(), 0u);
}

TEST_P(RateLimiterTest, TenantRefusalLeavesTheKeyCountersUntouched) {
  const std::vector<ScopeLimits> scopes = {Scope("k:one|m:x", 100, 100'000, 10), Scope("t:ten|m:*", 2, std::nullopt)};
  AdmitDecision a = Admit(scopes, 50);
  AdmitDecision b = Admit(scopes, 50);
  ASSERT_TRUE(a.admitted() && b.admitted());
  AdmitDecision c = Admit(scopes, 50);
  ASSERT_FALSE(c.admitted());
  EXPECT_EQ(c.refused->label, "t:ten|m:*");
  EXPECT_EQ(Used("k:one|m:x", CounterKind::kRequests), 2);
  EXPECT_EQ(Used("k:one|m:x", CounterKind::kTokens), 100);
  EXPECT_EQ(Used("k:one|m:x", CounterKind::kConcurrent), 2);
  // The headers show the tightest request limit, the tenant's.
  auto h = HeaderMap(c.headers);
  EXPECT_EQ(h["x-ratelimit-limit-requests"], "2");
  EXPECT_EQ(h["x-ratelimit-limit-tokens"], "100000");
  EXPECT_TRUE(a.admission->Settle(50).ok());
  EXPECT_TRUE(b.admission->Settle(50).ok());
}

TEST_P(RateLimiterTest, LimitsConcurrentRequestsAndFreesTheSlotOnSettle) {
  const std::vector<ScopeLimits> scopes = {Scope("k:c", std::nullopt, std::nullopt, 1)};
  AdmitDecision a = Admit(scopes, 0);
  ASSERT_TRUE(a.admitted());
  AdmitDecision b = Admit(scopes, 0);
  ASSERT_FALSE(b.admitted());
  EXPECT_EQ(b.refused->kind, CounterKind::kConcurrent);
  EXPECT_EQ(b.refused->type(), "concurrent_requests");
  EXPECT_EQ(HeaderMap(b.headers)["retry-after"], "1");
  ASSERT_TRUE(a.admission->Settle(0).ok());
  AdmitDecision c = Admit(scopes, 0);
  ASSERT_TRUE(c.admitted());
  EXPECT_TRUE(c.admission->Settle(0).ok());
}

TEST_P(RateLimiterTest, DroppedAdmissionChargesTheReservationAndFreesItsSlot) {
  const std::vector<ScopeLimits> scopes = {Scope("k:d", std::nullopt, 10'000, 1)};
  {
    AdmitDecision a = Admit(scopes, 700);
    ASSERT_TRUE(a.admitted());
  }
  EXPECT_EQ(Used("k:d", CounterKind::kTokens), 700);
  EXPECT_EQ(Used("k:d", CounterKind::kConcurrent), 0);
  {
    AdmitDecision a = Admit(scopes, 700);
    ASSERT_TRUE(a.admitted());
    a.admission->Observe(55);
  }
  EXPECT_EQ(Used("k:d", CounterKind::kTokens), 755);
  EXPECT_EQ(Used("k:d", CounterKind::kConcurrent), 0);
}

TEST_P(RateLimiterTest, SettlingTwiceIsAnError) {
  AdmitDecision a = Admit({Scope("k:twice", 10, 1000)}, 100);
  ASSERT_TRUE(a.admitted());
  ASSERT_TRUE(a.admission->Settle(10).ok());
  EXPECT_EQ(a.admission->Settle(10).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Used("k:twice", CounterKind::kTokens), 10);
}

TEST_P(RateLimiterTest, ARequestLargerThanTheTokenLimitNeverFits) {
  AdmitDecision d = Admit({Scope("k:big", std::nullopt, 1000)}, 5000);
  ASSERT_FALSE(d.admitted());
  EXPECT_TRUE(d.refused->never_fits);
  EXPECT_EQ(d.refused->type(), "tokens");
  EXPECT_NE(d.refused->message.find("Request too large"), std::string::npos) << d.refused->message;
  EXPECT_EQ(Used("k:big", CounterKind::kTokens), 0);
}

TEST_P(RateLimiterTest, ObservingALongRequestRenewsItsLease) {
  // Lease 600 s (default); a stream observed at 400 s holds its slot past 600 s.
  const std::vector<ScopeLimits> scopes = {Scope("k:long", std::nullopt, std::nullopt, 1)};
  AdmitDecision a = Admit(scopes, 0);
  ASSERT_TRUE(a.admitted());
  now_ += 400'000;
  a.admission->Observe(10);
  now_ += 300'000;
  EXPECT_FALSE(Admit(scopes, 0).admitted());
  ASSERT_TRUE(a.admission->Settle(12).ok());
  AdmitDecision b = Admit(scopes, 0);
  ASSERT_TRUE(b.admitted());
  EXPECT_TRUE(b.admission->Settle(0).ok());
}

TEST_P(RateLimiterTest, UnlimitedScopesAreAdmittedWithoutHeaders) {
  AdmitDecision d = Admit({Scope("k:free", std::nullopt, std::nullopt)}, 100);
  ASSERT_TRUE(d.admitted());
  EXPECT_TRUE(d.headers.empty());
  EXPECT_TRUE(d.admission->Settle(5).ok());
}

TEST_P(RateLimiterTest, RejectsBadRequests) {
  AdmitRequest r;
  r.scopes = {Scope("k:x", -1, std::nullopt)};
  EXPECT_EQ(limiter_->Admit(r).status().code(), StatusCode::kInvalidArgument);
  r.scopes = {Scope("k:x", 1, std::nullopt), Scope("k:x", 1, std::nullopt)};
  EXPECT_EQ(limiter_->Admit(r).status().code(), StatusCode::kInvalidArgument);
  r.scopes = {Scope("k:x", 1, 1)};
  r.reserve_tokens = -1;
  EXPECT_EQ(limiter_->Admit(r).status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, RateLimiterTest, ::testing::ValuesIn(testing::AllBackends()),
                         [](const auto& info) { return info.param; });

// The store goes away mid-run: admissions fail closed; a settlement made
// meanwhile is kept and applied once the store is back.
TEST(RateLimiterStoreFailureTest, LockedSqliteFailsClosedAndSettlesAfterItReturns) {
  Backend b("sqlite");
  CounterStoreOptions o;
  o.timeout_ms = 100;
  auto store = OpenSqliteCounterStore(b.path().string(), o);
  ASSERT_TRUE(store.ok());
  RateLimiter::Options lo;
  lo.now_ms = [] { return kT0; };
  RateLimiter limiter(store->get(), lo);
  AdmitRequest req;
  req.scopes = {Scope("k:f", 100, 100'000, 10)};
  req.reserve_tokens = 1000;
  auto a = limiter.Admit(req);
  ASSERT_TRUE(a.ok() && a->admitted());

  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(b.path().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto refused = limiter.Admit(req);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kIoError);
  EXPECT_FALSE(a->admission->Settle(120).ok());
  EXPECT_EQ(limiter.pending(), 1u);
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);

  auto again = limiter.Admit(req);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->admitted());
  EXPECT_EQ(limiter.pending(), 0u);
  EXPECT_EQ(*(*store)->Used("k:f", CounterKind::kTokens, kT0), 1120);
  EXPECT_EQ(*(*store)->Used("k:f", CounterKind::kRequests, kT0), 2);
  EXPECT_EQ(*(*store)->Used("k:f", CounterKind::kConcurrent, kT0), 1);
  ASSERT_TRUE(again->admission->Settle(1).ok());
}

TEST(RateLimiterStoreFailureTest, RedisGoneFailsClosedAndAdmitsAgainAfterRestart) {
  Backend b("redis");
  if (!b.ok()) GTEST_SKIP() << b.why();
  CounterStoreOptions o;
  o.timeout_ms = 500;
  auto store = OpenCounterStore(b.url(), o);
  ASSERT_TRUE(store.ok());
  RateLimiter limiter(store->get());
  AdmitRequest req;
  req.scopes = {Scope("k:f", 100, 100'000, 10)};
  req.reserve_tokens = 100;
  auto a = limiter.Admit(req);
  ASSERT_TRUE(a.ok() && a->admitted());
  b.redis()->Kill();
  auto down = limiter.Admit(req);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kIoError);
  EXPECT_FALSE(a->admission->Settle(50).ok());
  EXPECT_EQ(limiter.pending(), 1u);
  ASSERT_TRUE(b.redis()->Restart());
  auto up = limiter.Admit(req);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_TRUE(up->admitted());
  EXPECT_EQ(limiter.pending(), 0u);
  ASSERT_TRUE(up->admission->Settle(100).ok());
}

}  // namespace
}  // namespace pagoda::tenancy
