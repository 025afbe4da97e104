// PostgreSQL specifics: connections the server dropped are replaced (the
// next call works), an unreachable server is a clear error, and two stores
// opening the same database at once both get the schema.
#include "tenancy/postgres_counter_store.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>

#include "tenancy/counter_store_backends.h"
#include "tenancy/rate_limiter.h"

namespace pagoda::tenancy {
namespace {

// A PostgreSQL server of this test's own (tests/support/pg_fixture.sh), which
// it can stop (immediate, like a crash) and start again on the same data and port.
class PrivatePostgres {
 public:
  PrivatePostgres() {
    dir_ = pagoda::testing::TempDirForProcess() / "private_pg";
    const std::string script = std::string(PAGODA_SOURCE_DIR) + "/tests/support/pg_fixture.sh";
    if (std::system((script + " start " + dir_.string() + " >/dev/null 2>&1").c_str()) != 0) return;
    std::ifstream port_in(dir_ / "port"), data_in(dir_ / "datadir");
    if (!(port_in >> port_) || !std::getline(data_in, data_)) port_ = 0;
    FILE* p = ::popen("ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1", "r");
    char buf[512] = {};
    if (p && std::fgets(buf, sizeof buf, p)) bin_ = buf;
    if (p) ::pclose(p);
    while (!bin_.empty() && bin_.back() == '\n') bin_.pop_back();
  }
  ~PrivatePostgres() {
    const std::string script = std::string(PAGODA_SOURCE_DIR) + "/tests/support/pg_fixture.sh";
    (void)std::system((script + " stop " + dir_.string() + " >/dev/null 2>&1").c_str());
  }
  bool ok() const { return port_ > 0 && !bin_.empty(); }
  std::string Uri() const { return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres"; }
  bool Stop() { return PgCtl("-m immediate -w stop"); }
  bool Start() {
    return PgCtl("-l " + data_ + "/../restart.log -w -t 60 -o \"-p " + std::to_string(port_) +
                 " -c listen_addresses=127.0.0.1 -k " + data_ + " -c fsync=off\" start");
  }

 private:
  bool PgCtl(const std::string& args) {
    const std::string as_pg = ::getuid() == 0 ? "runuser -u postgres -- " : "";
    return std::system((as_pg + bin_ + "/pg_ctl -D " + data_ + " " + args + " >/dev/null 2>&1").c_str()) == 0;
  }
  std::filesystem::path dir_;
  std::string data_, bin_;
  int port_ = 0;
};

TEST(PostgresCounterStoreTest, ServerGoneFailsClosedAndNothingIsLostWhenItReturns) {
  if (!testing::Backend("postgres").ok()) GTEST_SKIP() << "PostgreSQL is not installed";
  PrivatePostgres pg;
  ASSERT_TRUE(pg.ok()) << "could not start a private PostgreSQL server";
  CounterStoreOptions o;
  o.timeout_ms = 2000;
  auto store = OpenPostgresCounterStore(pg.Uri(), o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  RateLimiter::Options lo;
  lo.now_ms = [] { return testing::kT0; };
  RateLimiter limiter(store->get(), lo);
  AdmitRequest req;
  ScopeLimits scope;
  scope.key = "k:pgdown";
  scope.requests = 100;
  scope.tokens = 100'000;
  scope.concurrent = 10;
  req.scopes = {scope};
  req.reserve_tokens = 1000;
  auto a = limiter.Admit(req);
  auto b = limiter.Admit(req);
  ASSERT_TRUE(a.ok() && a->admitted() && b.ok() && b->admitted());
  ASSERT_TRUE(a->admission->Settle(100).ok());

  ASSERT_TRUE(pg.Stop());
  auto down = limiter.Admit(req);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kIoError);
  EXPECT_NE(down.status().message().find(pg.Uri()), std::string::npos) << down.status().message();
  EXPECT_FALSE(b->admission->Settle(200).ok());  // queued
  EXPECT_EQ(limiter.pending(), 1u);

  ASSERT_TRUE(pg.Start());
  auto up = limiter.Admit(req);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_TRUE(up->admitted());
  EXPECT_EQ(limiter.pending(), 0u);
  // Everything committed before the stop is there; the queued settlement landed.
  EXPECT_EQ(*(*store)->Used("k:pgdown", CounterKind::kRequests, testing::kT0), 3);
  EXPECT_EQ(*(*store)->Used("k:pgdown", CounterKind::kTokens, testing::kT0), 100 + 200 + 1000);
  EXPECT_EQ(*(*store)->Used("k:pgdown", CounterKind::kConcurrent, testing::kT0), 1);
  ASSERT_TRUE(up->admission->Settle(0).ok());
}

TEST(PostgresCounterStoreTest, ReplacesConnectionsTheServerDropped) {
  testing::Backend b("postgres");
  if (!b.ok()) GTEST_SKIP() << b.why();
  auto store = OpenPostgresCounterStore(b.url());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<CounterRule> rules = {{"k:pg", CounterKind::kRequests, 100, 1}};
  ASSERT_TRUE((*store)->Acquire(rules, testing::kT0, "")->admitted);
  ASSERT_TRUE(b.postgres()->server()->Psql(
      "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + b.postgres()->name() +
                      "' AND pid <> pg_backend_pid()"));
  auto r = (*store)->Acquire(rules, testing::kT0, "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->admitted);
  EXPECT_EQ(r->readings[0].used, 2);
}

TEST(PostgresCounterStoreTest, UnreachableServerIsAClearError) {
  CounterStoreOptions o;
  o.timeout_ms = 1000;
  auto s = OpenPostgresCounterStore("postgresql://postgres:secret@127.0.0.1:1/none", o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kIoError);
  EXPECT_NE(s.status().message().find("connect"), std::string::npos) << s.status().message();
  EXPECT_EQ(s.status().message().find("secret"), std::string::npos) << s.status().message();
}

TEST(PostgresCounterStoreTest, StoresOpeningTogetherBothGetTheSchema) {
  testing::Backend b("postgres");
  if (!b.ok()) GTEST_SKIP() << b.why();
  Status s1, s2;
  std::thread t1([&] { s1 = OpenPostgresCounterStore(b.url()).status(); });
  std::thread t2([&] { s2 = OpenPostgresCounterStore(b.url()).status(); });
  t1.join();
  t2.join();
  EXPECT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_TRUE(s2.ok()) << s2.ToString();
}

}  // namespace
}  // namespace pagoda::tenancy
