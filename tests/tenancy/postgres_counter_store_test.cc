// PostgreSQL specifics: connections the server dropped are replaced (the
// next call works), an unreachable server is a clear error, and two stores
// opening the same database at once both get the schema.
#include "tenancy/postgres_counter_store.h"

#include <thread>

#include <gtest/gtest.h>

#include "tenancy/counter_store_backends.h"

namespace pagoda::tenancy {
namespace {

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
