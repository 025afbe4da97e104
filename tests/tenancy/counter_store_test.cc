// The CounterStore contract, run over every backend (SQLite, PostgreSQL,
// Redis): exact limits under concurrent bursts from threads and from two
// processes, all-or-nothing rules, token settlement, concurrency slots and
// their leases, window rollover. Times are injected; nothing here waits on
// the clock.
#include "tenancy/counter_store.h"

#include <atomic>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tenancy/counter_store_backends.h"

namespace pagoda::tenancy {
namespace {

using testing::Backend;
using testing::kT0;

struct BurstCount {
  int admitted = 0;
  int refused = 0;
  int errors = 0;
};

// `threads` threads, each firing `per_thread` Acquires at once on `store`.
BurstCount Burst(CounterStore* store, const std::vector<CounterRule>& rules, int64_t now, int threads, int per_thread,
                 const std::string& tag) {
  std::atomic<int> admitted{0}, refused{0}, errors{0}, ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      ++ready;
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < per_thread; ++i) {
        auto r = store->Acquire(rules, now, tag + "-" + std::to_string(t) + "-" + std::to_string(i));
        if (!r.ok()) {
          ++errors;
        } else if (r->admitted) {
          ++admitted;
        } else {
          ++refused;
        }
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  go = true;
  for (auto& t : ts) t.join();
  return {admitted.load(), refused.load(), errors.load()};
}

// Two (or more) processes, each with its own store connection and `threads`
// threads, released together. Counts summed over the processes.
BurstCount BurstAcrossProcesses(const std::string& url, const std::vector<CounterRule>& rules, int64_t now,
                                int processes, int threads, int per_thread) {
  int go[2], ready[2], result[2];
  if (::pipe(go) != 0 || ::pipe(ready) != 0 || ::pipe(result) != 0) return {0, 0, -1};
  std::vector<pid_t> pids;
  for (int p = 0; p < processes; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(go[1]);
      ::close(ready[0]);
      ::close(result[0]);
      BurstCount c;
      auto store = OpenCounterStore(url);
      char byte = store.ok() ? 1 : 0;
      (void)!::write(ready[1], &byte, 1);
      (void)!::read(go[0], &byte, 1);  // returns 0 when the parent closes its end: go
      if (store.ok()) {
        std::string tag = "p";
        tag += std::to_string(::getpid());
        c = Burst(store->get(), rules, now, threads, per_thread, tag);
      } else {
        c.errors = threads * per_thread;
      }
      (void)!::write(result[1], &c, sizeof c);
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  ::close(go[0]);
  ::close(ready[1]);
  ::close(result[1]);
  BurstCount total;
  for (int p = 0; p < processes; ++p) {
    char byte = 0;
    if (::read(ready[0], &byte, 1) != 1 || byte != 1) total.errors += 1;
  }
  ::close(go[1]);  // release every child at once
  for (int p = 0; p < processes; ++p) {
    BurstCount c;
    if (::read(result[0], &c, sizeof c) != static_cast<ssize_t>(sizeof c)) {
      total.errors += 1;
      continue;
    }
    total.admitted += c.admitted;
    total.refused += c.refused;
    total.errors += c.errors;
  }
  for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
  ::close(ready[0]);
  ::close(result[0]);
  return total;
}

class CounterStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = std::make_unique<Backend>(GetParam());
    if (!backend_->ok()) GTEST_SKIP() << backend_->why();
  }
  std::unique_ptr<CounterStore> Open(const CounterStoreOptions& o = {}) { return backend_->Open(o); }
  int64_t Used(CounterStore* s, const std::string& key, CounterKind kind, int64_t now) {
    auto u = s->Used(key, kind, now);
    EXPECT_TRUE(u.ok()) << u.status().ToString();
    return u.ok() ? *u : -1;
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(CounterStoreTest, AdmitsExactlyTheLimitUnderAThreadBurst) {
  auto store = Open();
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"k:burst|m:a", CounterKind::kRequests, 50, 1}};
  BurstCount c = Burst(store.get(), rules, kT0 + 10, 8, 10, "t");
  EXPECT_EQ(c.errors, 0);
  EXPECT_EQ(c.admitted, 50);
  EXPECT_EQ(c.refused, 30);
  EXPECT_EQ(Used(store.get(), "k:burst|m:a", CounterKind::kRequests, kT0 + 20), 50);
}

TEST_P(CounterStoreTest, RefusesNoneBelowTheLimitUnderAThreadBurst) {
  auto store = Open();
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"k:below", CounterKind::kRequests, 50, 1},
                                          {"k:below", CounterKind::kConcurrent, 50, 1}};
  BurstCount c = Burst(store.get(), rules, kT0, 8, 5, "t");
  EXPECT_EQ(c.errors, 0);
  EXPECT_EQ(c.admitted, 40);
  EXPECT_EQ(c.refused, 0);
  EXPECT_EQ(Used(store.get(), "k:below", CounterKind::kConcurrent, kT0), 40);
}

TEST_P(CounterStoreTest, AdmitsExactlyTheLimitAcrossTwoProcesses) {
  auto store = Open();  // creates the schema before the children race
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"t:shared|m:*", CounterKind::kRequests, 50, 1},
                                          {"t:shared|m:*", CounterKind::kTokens, 50'000, 100},
                                          {"t:shared|m:*", CounterKind::kConcurrent, 1000, 1}};
  BurstCount c = BurstAcrossProcesses(backend_->url(), rules, kT0 + 5, 2, 4, 10);
  EXPECT_EQ(c.errors, 0);
  EXPECT_EQ(c.admitted, 50);
  EXPECT_EQ(c.refused, 30);
  EXPECT_EQ(Used(store.get(), "t:shared|m:*", CounterKind::kRequests, kT0 + 5), 50);
  EXPECT_EQ(Used(store.get(), "t:shared|m:*", CounterKind::kTokens, kT0 + 5), 5000);
  EXPECT_EQ(Used(store.get(), "t:shared|m:*", CounterKind::kConcurrent, kT0 + 5), 50);
}

TEST_P(CounterStoreTest, RefusesNoneBelowTheLimitAcrossTwoProcesses) {
  auto store = Open();
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"t:shared", CounterKind::kRequests, 50, 1},
                                          {"k:one", CounterKind::kTokens, 4000, 100}};
  BurstCount c = BurstAcrossProcesses(backend_->url(), rules, kT0, 2, 4, 5);
  EXPECT_EQ(c.errors, 0);
  EXPECT_EQ(c.admitted, 40);
  EXPECT_EQ(c.refused, 0);
  EXPECT_EQ(Used(store.get(), "k:one", CounterKind::kTokens, kT0), 4000);
}

TEST_P(CounterStoreTest, AppliesNothingWhenOneRuleRefuses) {
  auto store = Open();
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"k:key1|m:a", CounterKind::kRequests, 10, 1},
                                          {"k:key1|m:a", CounterKind::kConcurrent, 10, 1},
                                          {"t:ten|m:*", CounterKind::kRequests, 3, 1}};
  for (int i = 0; i < 3; ++i) {
    auto r = store->Acquire(rules, kT0, "s" + std::to_string(i));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->admitted);
  }
  auto r = store->Acquire(rules, kT0, "s3");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->admitted);
  EXPECT_EQ(r->refused_rule, 2);
  ASSERT_EQ(r->readings.size(), 3u);
  EXPECT_EQ(r->readings[2].used, 3);
  EXPECT_EQ(r->readings[2].remaining(), 0);
  EXPECT_EQ(r->readings[2].reset_ms, kT0 + 60'000);
  EXPECT_EQ(Used(store.get(), "k:key1|m:a", CounterKind::kRequests, kT0), 3);
  EXPECT_EQ(Used(store.get(), "k:key1|m:a", CounterKind::kConcurrent, kT0), 3);
}

TEST_P(CounterStoreTest, SettlesTokensToTheActualCount) {
  auto store = Open();
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"k:tok", CounterKind::kTokens, 10'000, 1000},
                                          {"t:tok", CounterKind::kTokens, 10'000, 1000}};
  auto a = store->Acquire(rules, kT0 + 1, "");
  ASSERT_TRUE(a.ok() && a->admitted);
  EXPECT_EQ(a->readings[0].used, 1000);
  // Completed with 120 tokens.
  ASSERT_TRUE(store->Settle({"k:tok", "t:tok"}, a->window_start_ms, 120 - 1000).ok());
  EXPECT_EQ(Used(store.get(), "k:tok", CounterKind::kTokens, kT0 + 2), 120);
  EXPECT_EQ(Used(store.get(), "t:tok", CounterKind::kTokens, kT0 + 2), 120);
  // Failed before any token (0) and cancelled after 37.
  auto b = store->Acquire(rules, kT0 + 3, "");
  auto c = store->Acquire(rules, kT0 + 4, "");
  ASSERT_TRUE(b.ok() && b->admitted && c.ok() && c->admitted);
  ASSERT_TRUE(store->Settle({"k:tok", "t:tok"}, b->window_start_ms, 0 - 1000).ok());
  ASSERT_TRUE(store->Settle({"k:tok", "t:tok"}, c->window_start_ms, 37 - 1000).ok());
  EXPECT_EQ(Used(store.get(), "k:tok", CounterKind::kTokens, kT0 + 5), 157);
  // Ran past its reservation: charged the extra.
  auto d = store->Acquire(rules, kT0 + 6, "");
  ASSERT_TRUE(d.ok() && d->admitted);
  ASSERT_TRUE(store->Settle({"k:tok"}, d->window_start_ms, 1500 - 1000).ok());
  EXPECT_EQ(Used(store.get(), "k:tok", CounterKind::kTokens, kT0 + 7), 1657);
  // A refund never takes a counter below zero.
  ASSERT_TRUE(store->Settle({"k:tok"}, d->window_start_ms, -1'000'000).ok());
  EXPECT_EQ(Used(store.get(), "k:tok", CounterKind::kTokens, kT0 + 7), 0);
}

TEST_P(CounterStoreTest, TokenReservationsCountAgainstTheLimitUntilSettled) {
  auto store = Open();
  ASSERT_TRUE(store);
  auto rules = [](int64_t reserve) { return std::vector<CounterRule>{{"k:tpm", CounterKind::kTokens, 1000, reserve}}; };
  auto a = store->Acquire(rules(600), kT0, "");
  ASSERT_TRUE(a.ok() && a->admitted);
  auto b = store->Acquire(rules(600), kT0, "");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->admitted);
  EXPECT_EQ(b->readings[0].used, 600);
  auto exact = store->Acquire(rules(400), kT0, "");  // exactly up to the limit
  ASSERT_TRUE(exact.ok() && exact->admitted);
  ASSERT_TRUE(store->Settle({"k:tpm"}, a->window_start_ms, 100 - 600).ok());
  auto c = store->Acquire(rules(500), kT0, "");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->admitted);
  EXPECT_EQ(c->readings[0].used, 1000);
}

TEST_P(CounterStoreTest, LimitsConcurrencyAndReleasesSlots) {
  auto store = Open();
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"k:conc", CounterKind::kConcurrent, 2, 1}};
  ASSERT_TRUE(store->Acquire(rules, kT0, "a")->admitted);
  ASSERT_TRUE(store->Acquire(rules, kT0, "b")->admitted);
  auto c = store->Acquire(rules, kT0, "c");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->admitted);
  EXPECT_EQ(c->readings[0].used, 2);
  EXPECT_EQ(c->readings[0].reset_ms, 0);
  ASSERT_TRUE(store->Release({"k:conc"}, "a").ok());
  EXPECT_EQ(Used(store.get(), "k:conc", CounterKind::kConcurrent, kT0), 1);
  EXPECT_TRUE(store->Acquire(rules, kT0, "c")->admitted);
  // Releasing an unknown slot changes nothing.
  ASSERT_TRUE(store->Release({"k:conc"}, "nope").ok());
  EXPECT_EQ(Used(store.get(), "k:conc", CounterKind::kConcurrent, kT0), 2);
}

TEST_P(CounterStoreTest, ExpiresTheSlotsOfACrashedHolderAfterTheLease) {
  CounterStoreOptions o;
  o.lease_ms = 1000;
  auto store = Open(o);
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"k:lease", CounterKind::kConcurrent, 1, 1}};
  ASSERT_TRUE(store->Acquire(rules, kT0, "crashed")->admitted);  // never released
  EXPECT_FALSE(store->Acquire(rules, kT0 + 999, "x")->admitted);
  EXPECT_EQ(Used(store.get(), "k:lease", CounterKind::kConcurrent, kT0 + 999), 1);
  EXPECT_EQ(Used(store.get(), "k:lease", CounterKind::kConcurrent, kT0 + 1000), 0);
  EXPECT_TRUE(store->Acquire(rules, kT0 + 1000, "y")->admitted);
}

TEST_P(CounterStoreTest, RenewedLeaseKeepsTheSlot) {
  CounterStoreOptions o;
  o.lease_ms = 1000;
  auto store = Open(o);
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"k:renew", CounterKind::kConcurrent, 1, 1}};
  ASSERT_TRUE(store->Acquire(rules, kT0, "long")->admitted);
  ASSERT_TRUE(store->RenewSlots({"k:renew"}, "long", kT0 + 900).ok());
  EXPECT_FALSE(store->Acquire(rules, kT0 + 1500, "x")->admitted);
  EXPECT_TRUE(store->Acquire(rules, kT0 + 1900, "x")->admitted);
}

TEST_P(CounterStoreTest, StartsEachWindowFromZero) {
  CounterStoreOptions o;
  o.window_ms = 2000;
  auto store = Open(o);
  ASSERT_TRUE(store);
  const std::vector<CounterRule> rules = {{"k:roll", CounterKind::kRequests, 2, 1}};
  auto a = store->Acquire(rules, kT0 + 100, "");
  ASSERT_TRUE(a.ok() && a->admitted);
  EXPECT_EQ(a->window_start_ms, kT0);
  EXPECT_EQ(a->readings[0].reset_ms, kT0 + 2000);
  EXPECT_EQ(a->readings[0].remaining(), 1);
  ASSERT_TRUE(store->Acquire(rules, kT0 + 1999, "")->admitted);
  auto refused = store->Acquire(rules, kT0 + 1999, "");
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->admitted);
  auto next = store->Acquire(rules, kT0 + 2000, "");
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->admitted);
  EXPECT_EQ(next->window_start_ms, kT0 + 2000);
  EXPECT_EQ(next->readings[0].used, 1);
  EXPECT_EQ(next->readings[0].reset_ms, kT0 + 4000);
  // A settlement lands in the admission's window, not the current one.
  const std::vector<CounterRule> tok = {{"k:roll", CounterKind::kTokens, 100, 50}};
  auto t = store->Acquire(tok, kT0 + 3999, "");
  ASSERT_TRUE(t.ok() && t->admitted);
  ASSERT_TRUE(store->Settle({"k:roll"}, t->window_start_ms, -40).ok());
  EXPECT_EQ(Used(store.get(), "k:roll", CounterKind::kTokens, kT0 + 3999), 10);
  EXPECT_EQ(Used(store.get(), "k:roll", CounterKind::kTokens, kT0 + 4000), 0);
}

TEST_P(CounterStoreTest, ZeroLimitRefusesEverything) {
  auto store = Open();
  ASSERT_TRUE(store);
  auto r = store->Acquire({{"k:zero", CounterKind::kRequests, 0, 1}}, kT0, "");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->admitted);
  EXPECT_EQ(r->refused_rule, 0);
}

TEST_P(CounterStoreTest, KeysWithQuotesAndSeparatorsStayApart) {
  auto store = Open();
  ASSERT_TRUE(store);
  const std::string odd = "t:a\"b\\c,{d}|m:x:r:1 ü";
  ASSERT_TRUE(store->Acquire({{odd, CounterKind::kRequests, 5, 1}}, kT0, "")->admitted);
  ASSERT_TRUE(store->Acquire({{"t:a", CounterKind::kRequests, 5, 1}}, kT0, "")->admitted);
  EXPECT_EQ(Used(store.get(), odd, CounterKind::kRequests, kT0), 1);
  EXPECT_EQ(Used(store.get(), "t:a", CounterKind::kRequests, kT0), 1);
}

TEST_P(CounterStoreTest, RejectsBadRules) {
  auto store = Open();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->Acquire({{"", CounterKind::kRequests, 1, 1}}, kT0, "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Acquire({{"k", CounterKind::kRequests, -1, 1}}, kT0, "").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Acquire({{"k", CounterKind::kConcurrent, 1, 1}}, kT0, "").status().code(),
            StatusCode::kInvalidArgument);  // no slot id
  EXPECT_EQ(
      store->Acquire({{"k", CounterKind::kRequests, 1, 1}, {"k", CounterKind::kRequests, 1, 1}}, kT0, "").status().code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Acquire({{std::string("a\0b", 3), CounterKind::kRequests, 1, 1}}, kT0, "").status().code(),
            StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Backends, CounterStoreTest, ::testing::ValuesIn(testing::AllBackends()),
                         [](const auto& info) { return info.param; });

TEST(CounterStoreUrlTest, RejectsUnknownSchemesWithoutShowingThePassword) {
  auto s = OpenCounterStore("mysql://user:hunter2@host/db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message().find("hunter2"), std::string::npos);
  EXPECT_FALSE(OpenCounterStore("").ok());
  CounterStoreOptions bad;
  bad.window_ms = 0;
  EXPECT_EQ(OpenCounterStore("sqlite:///tmp/x.db", bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(CounterStoreUrlTest, RedactsPasswords) {
  EXPECT_EQ(RedactUrlPassword("redis://:pw@h:1/0"), "redis://@h:1/0");
  EXPECT_EQ(RedactUrlPassword("postgresql://u:pw@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactUrlPassword("postgresql://u@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(RedactUrlPassword("redis://h:6379/0"), "redis://h:6379/0");
}

TEST(CounterStoreUrlTest, AlignsWindowsToTheEpoch) {
  EXPECT_EQ(WindowStart(125'000, 60'000), 120'000);
  EXPECT_EQ(WindowStart(120'000, 60'000), 120'000);
  EXPECT_EQ(WindowStart(-1, 60'000), -60'000);
}

}  // namespace
}  // namespace pagoda::tenancy
