#include "tenancy/sqlite_tenant_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "tenancy/store_backends.h"
#include "tenancy/store_schema.h"

namespace pagoda::tenancy {
namespace {

using testsupport::TempDir;

// A raw connection, as another process or an old pagoda would hold it.
class RawDb {
 public:
  explicit RawDb(const std::string& path) { EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK); }
  ~RawDb() { sqlite3_close(db_); }
  bool Exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (err) {
      ADD_FAILURE() << sql << ": " << err;
      sqlite3_free(err);
    }
    return rc == SQLITE_OK;
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST(SqliteTenantStoreTest, MigratesAFreshFileToWalAndTheLatestVersion) {
  TempDir dir;
  auto store = OpenSqliteTenantStore(dir.File("fresh.db"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(*(*store)->SchemaVersion(), LatestSchemaVersion());
  auto db = OpenSqliteDatabase(dir.File("fresh.db"));
  ASSERT_TRUE(db.ok());
  auto mode = (*db)->Query("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  EXPECT_EQ(SqlText((*mode)[0][0]), "wal");
  auto versions = (*db)->Query("SELECT version FROM schema_migrations ORDER BY version");
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), Migrations().size());
  for (size_t i = 0; i < versions->size(); ++i) EXPECT_EQ(SqlInt((*versions)[i][0]), Migrations()[i].version);
  EXPECT_EQ((*store)->Describe(), "sqlite:" + dir.File("fresh.db"));
}

TEST(SqliteTenantStoreTest, MigratesAVersionOneFileKeepingItsRows) {
  TempDir dir;
  const std::string path = dir.File("old.db");
  {
    RawDb raw(path);
    ASSERT_TRUE(raw.Exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)"));
    for (const std::string& sql : Migrations()[0].sqlite) ASSERT_TRUE(raw.Exec(sql));
    ASSERT_TRUE(raw.Exec("INSERT INTO schema_migrations VALUES (1, 1)"));
    ASSERT_TRUE(raw.Exec("INSERT INTO tenants (id, name, plan, created_at) VALUES ('old', 'Old', 'serverless', 5)"));
  }
  auto store = OpenSqliteTenantStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(*(*store)->SchemaVersion(), LatestSchemaVersion());
  auto t = (*store)->GetTenant("old");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->name, "Old");
  // Version 2's tables work.
  EXPECT_TRUE((*store)->SetLimits({LimitScope::kTenant, "old", "", {10, 0, 0}}).ok());
  EXPECT_TRUE((*store)->SetReservation({"old", "m", 100}).ok());
}

TEST(SqliteTenantStoreTest, RefusesASchemaNewerThanItKnows) {
  TempDir dir;
  const std::string path = dir.File("new.db");
  ASSERT_TRUE(OpenSqliteTenantStore(path).ok());
  {
    RawDb raw(path);
    ASSERT_TRUE(raw.Exec("INSERT INTO schema_migrations VALUES (99, 1)"));
  }
  auto store = OpenSqliteTenantStore(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("newer"), std::string::npos) << store.status().ToString();
  EXPECT_NE(store.status().message().find(path), std::string::npos) << store.status().ToString();
}

TEST(SqliteTenantStoreTest, CorruptFileIsDataLossNamingThePath) {
  TempDir dir;
  const std::string path = dir.File("garbage.db");
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 8192; ++i) out.put(static_cast<char>((i * 7919) & 0xff));
  }
  auto store = OpenSqliteTenantStore(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kDataLoss) << store.status().ToString();
  EXPECT_NE(store.status().message().find(path), std::string::npos);
  EXPECT_NE(store.status().message().find("not a SQLite database"), std::string::npos);
  // Read-only opens say the same.
  StoreOptions ro;
  ro.read_only = true;
  EXPECT_EQ(OpenSqliteTenantStore(path, ro).status().code(), StatusCode::kDataLoss);
}

TEST(SqliteTenantStoreTest, MissingDirectoryAndDirectoryPathAreClearErrors) {
  TempDir dir;
  auto missing = OpenSqliteTenantStore(dir.File("no/such/dir/x.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find("does not exist"), std::string::npos) << missing.status().ToString();
  auto is_dir = OpenSqliteTenantStore(dir.path().string());
  EXPECT_EQ(is_dir.status().code(), StatusCode::kInvalidArgument) << is_dir.status().ToString();
  StoreOptions ro;
  ro.read_only = true;
  EXPECT_EQ(OpenSqliteTenantStore(dir.File("absent.db"), ro).status().code(), StatusCode::kNotFound);
}

TEST(SqliteTenantStoreTest, ReadOnlyFileRefusesWritesClearlyAndReadsWithReadOnlyOption) {
  TempDir dir;
  const std::string path = dir.File("ro.db");
  {
    auto store = OpenSqliteTenantStore(path);
    ASSERT_TRUE(store.ok());
    Tenant t;
    t.id = "t1";
    ASSERT_TRUE((*store)->CreateTenant(t).ok());
  }  // closed: WAL checkpointed and removed
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  // As root file modes do not apply, so the check runs as `nobody`.
  const int rc = testsupport::RunUnprivileged([&] {
    auto store = OpenSqliteTenantStore(path);
    if (store.ok()) return 1;
    if (store.status().code() != StatusCode::kFailedPrecondition) return 2;
    if (store.status().message().find("read-only") == std::string::npos) return 3;
    if (store.status().message().find(path) == std::string::npos) return 4;
    return 0;
  });
  EXPECT_EQ(rc, 0) << "1: opened for writing; 2: wrong code; 3/4: message lacks read-only / the path";

  // The read_only option reads (as the owner here) and refuses writes.
  StoreOptions ro;
  ro.read_only = true;
  auto store = OpenSqliteTenantStore(path, ro);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->GetTenant("t1").ok());
  Tenant t;
  t.id = "t2";
  auto w = (*store)->CreateTenant(t);
  EXPECT_EQ(w.status().code(), StatusCode::kFailedPrecondition) << w.status().ToString();
}

TEST(SqliteTenantStoreTest, LockedDatabaseFailsWritesAfterTheBusyTimeout) {
  TempDir dir;
  const std::string path = dir.File("locked.db");
  StoreOptions opts;
  opts.busy_timeout_ms = 200;
  auto store = OpenSqliteTenantStore(path, opts);
  ASSERT_TRUE(store.ok());
  Tenant t;
  t.id = "t1";
  ASSERT_TRUE((*store)->CreateTenant(t).ok());
  {
    RawDb other(path);  // another process holding the write lock
    ASSERT_TRUE(other.Exec("BEGIN EXCLUSIVE"));
    t.id = "t2";
    const auto start = std::chrono::steady_clock::now();
    auto w = (*store)->CreateTenant(t);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kIoError);
    EXPECT_NE(w.status().message().find("locked"), std::string::npos) << w.status().ToString();
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(150));
    // Readers are not blocked in WAL mode.
    EXPECT_TRUE((*store)->GetTenant("t1").ok());
    ASSERT_TRUE(other.Exec("ROLLBACK"));
  }
  EXPECT_TRUE((*store)->CreateTenant(t).ok());
}

TEST(SqliteTenantStoreTest, OpeningAFileLockedByAnotherProcessFailsClearly) {
  TempDir dir;
  const std::string path = dir.File("held.db");
  RawDb other(path);  // a rollback-journal database, exclusively locked
  ASSERT_TRUE(other.Exec("CREATE TABLE x (a)"));
  ASSERT_TRUE(other.Exec("BEGIN EXCLUSIVE"));
  ASSERT_TRUE(other.Exec("INSERT INTO x VALUES (1)"));
  StoreOptions opts;
  opts.busy_timeout_ms = 100;
  auto store = OpenSqliteTenantStore(path, opts);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kIoError) << store.status().ToString();
  EXPECT_NE(store.status().message().find("locked"), std::string::npos) << store.status().ToString();
  ASSERT_TRUE(other.Exec("COMMIT"));
}

TEST(SqliteTenantStoreTest, ConcurrentWritersFromThreadsAndStoresAllLand) {
  TempDir dir;
  const std::string path = dir.File("busy.db");
  auto a = OpenSqliteTenantStore(path);
  auto b = OpenSqliteTenantStore(path);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      TenantStore& s = t % 2 ? **a : **b;
      for (int i = 0; i < 50; ++i) {
        UsageRecord r;
        r.request_id = "t" + std::to_string(t) + "-" + std::to_string(i);
        r.tenant_id = "x";
        r.prompt_tokens = 1;
        EXPECT_TRUE(s.AppendUsage(std::span(&r, 1)).ok());
        EXPECT_TRUE(s.Generation().ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  auto rows = (*a)->QueryUsage({});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ((*rows)[0].requests, 200);
}

}  // namespace
}  // namespace pagoda::tenancy
