// SQLite specifics: a file locked by another writer gives a clear error after
// busy_timeout (never an unmetered admission) and works again once freed;
// the URL forms.
#include "tenancy/sqlite_counter_store.h"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include "tenancy/counter_store_backends.h"

namespace pagoda::tenancy {
namespace {

TEST(SqliteCounterStoreTest, LockedFileGivesAClearErrorAfterTheBusyTimeout) {
  testing::Backend b("sqlite");
  CounterStoreOptions o;
  o.timeout_ms = 100;
  auto store = OpenSqliteCounterStore(b.path().string(), o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<CounterRule> rules = {{"k:locked", CounterKind::kRequests, 10, 1}};
  ASSERT_TRUE((*store)->Acquire(rules, testing::kT0, "").ok());

  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(b.path().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto r = (*store)->Acquire(rules, testing::kT0, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("locked"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("sqlite:"), std::string::npos) << r.status().message();
  EXPECT_FALSE((*store)->Settle({"k:locked"}, testing::kT0, -1).ok());
  ASSERT_EQ(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);

  auto again = (*store)->Acquire(rules, testing::kT0, "");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->admitted);
  EXPECT_EQ(again->readings[0].used, 2);  // the refused attempt left nothing behind
}

TEST(SqliteCounterStoreTest, OpensEveryUrlForm) {
  testing::Backend b("sqlite");
  for (const std::string& url : {b.path().string(), "sqlite://" + b.path().string(), "sqlite:" + b.path().string()}) {
    auto s = OpenCounterStore(url);
    ASSERT_TRUE(s.ok()) << url << ": " << s.status().ToString();
    EXPECT_EQ((*s)->Describe(), "sqlite:" + b.path().string());
  }
}

TEST(SqliteCounterStoreTest, UnwritablePathIsAClearError) {
  auto s = OpenSqliteCounterStore("/nonexistent-dir/counters.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kIoError);
  EXPECT_NE(s.status().message().find("/nonexistent-dir/counters.db"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::tenancy
