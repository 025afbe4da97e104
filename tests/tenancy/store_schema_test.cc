// Schema migrations on both backends: a database left at version 3 (as the
// release before workload classes wrote it) is brought to version 4 with its
// rows kept and the new columns at their defaults.
#include "tenancy/store_schema.h"

#include <gtest/gtest.h>

#include "tenancy/postgres_tenant_store.h"
#include "tenancy/sqlite_tenant_store.h"
#include "tenancy/store_backends.h"

namespace pagoda::tenancy {
namespace {

using testsupport::Backend;

constexpr int64_t kNow = 1'750'000'000'000;

class StoreSchemaTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = Backend::Make(GetParam());
    if (!backend_->ok()) GTEST_SKIP() << backend_->why();
  }

  Result<std::unique_ptr<SqlDatabase>> OpenRaw() {
    const std::string url = backend_->url();
    if (GetParam() == "sqlite") return OpenSqliteDatabase(url.substr(std::string("sqlite://").size()));
    return OpenPostgresDatabase(url);
  }

  // The database as a pagoda that knew migrations 1..`version` left it.
  void MigrateTo(SqlDatabase& db, int version, const std::vector<std::string>& then) {
    const bool pg = db.dialect() == SqlDialect::kPostgres;
    Status st = db.Transact(true, [&](SqlConnection& c) -> Status {
      PAGODA_RETURN_IF_ERROR(
          c.Exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)").status());
      for (const Migration& m : Migrations()) {
        if (m.version > version) break;
        for (const std::string& sql : pg ? m.postgres : m.sqlite) PAGODA_RETURN_IF_ERROR(c.Exec(sql).status());
        const SqlValue p[] = {int64_t{m.version}, int64_t{1}};
        PAGODA_RETURN_IF_ERROR(c.Exec("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", p).status());
      }
      for (const std::string& sql : then) PAGODA_RETURN_IF_ERROR(c.Exec(sql).status());
      return Status::Ok();
    });
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  std::unique_ptr<Backend> backend_;
};

TEST_P(StoreSchemaTest, VersionFourIsTheLatestAndAddsTheClassColumns) {
  ASSERT_GE(LatestSchemaVersion(), 4);
  const Migration& m = Migrations()[3];
  EXPECT_EQ(m.version, 4);
  EXPECT_EQ(m.sqlite.size(), m.postgres.size());
}

TEST_P(StoreSchemaTest, MigratesAVersionThreeDatabaseKeepingItsRows) {
  {
    auto raw = OpenRaw();
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    MigrateTo(**raw, 3,
              {"INSERT INTO tenants (id, name, plan, created_at) VALUES ('old', 'Old', 'provisioned', 5)",
               "INSERT INTO api_keys (id, tenant_id, name, hash, created_at) VALUES ('key_old', 'old', 'k', '" +
                   std::string(64, 'a') + "', 5)",
               "INSERT INTO prices (model, input_per_mtok, cached_input_per_mtok, output_per_mtok) "
               "VALUES ('m', 1, 0.5, 2)",
               "INSERT INTO usage_records (request_id, tenant_id, key_id, model, deployment, version, prompt_tokens, "
               "cached_tokens, completion_tokens, queue_ms, ttft_ms, total_ms, status, http_status, started_at_ms) "
               "VALUES ('req-old', 'old', 'key_old', 'm', 'd', 'v', 1000000, 0, 1000000, 0, 0, 0, 'ok', 200, " +
                   std::to_string(kNow) + ")"});
    auto v = ReadSchemaVersion(**raw);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, 3);
  }
  auto store = backend_->Open();
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  TenantStore& s = **store;
  EXPECT_EQ(*s.SchemaVersion(), LatestSchemaVersion());

  // Old rows read with the new columns' defaults.
  auto t = s.GetTenant("old");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->name, "Old");
  EXPECT_FALSE(t->max_class.has_value());  // the plan's
  EXPECT_EQ(t->default_class, WorkloadClass::kInteractive);
  auto k = s.GetKey("key_old");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_FALSE(k->max_class.has_value());
  auto prices = s.ListPrices();
  ASSERT_TRUE(prices.ok());
  ASSERT_EQ(prices->size(), 1u);
  EXPECT_DOUBLE_EQ((*prices)[0].batch_factor, 1.0);
  auto usage = s.ListUsage("old", 0, INT64_MAX, 10);
  ASSERT_TRUE(usage.ok());
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_EQ((*usage)[0].service_tier, WorkloadClass::kInteractive);

  // And the new columns take values.
  t->max_class = WorkloadClass::kBatch;
  t->default_class = WorkloadClass::kBatch;
  ASSERT_TRUE(s.UpdateTenant(*t).ok());
  EXPECT_EQ(s.GetTenant("old")->max_class, WorkloadClass::kBatch);
  ASSERT_TRUE(s.SetPrice({"m", 1, 0.5, 2, 0, 0.5}).ok());
  EXPECT_DOUBLE_EQ((*s.ListPrices())[0].batch_factor, 0.5);
  UsageRecord r;
  r.request_id = "req-new";
  r.tenant_id = "old";
  r.model = "m";
  r.started_at_ms = kNow + 1;
  r.service_tier = WorkloadClass::kBatch;
  ASSERT_TRUE(s.AppendUsage(std::span(&r, 1)).ok());
  EXPECT_EQ((*s.ListUsage("old", 0, INT64_MAX, 10))[1].service_tier, WorkloadClass::kBatch);
  // A second open finds nothing to do.
  store->reset();
  auto again = backend_->Open();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*(*again)->SchemaVersion(), LatestSchemaVersion());
}

TEST_P(StoreSchemaTest, CorruptClassNamesReadAsDataLoss) {
  {
    auto raw = OpenRaw();
    ASSERT_TRUE(raw.ok()) << raw.status().ToString();
    MigrateTo(**raw, LatestSchemaVersion(),
              {"INSERT INTO tenants (id, name, plan, created_at, max_class) VALUES ('odd', 'Odd', 'serverless', 5, "
               "'gold')"});
  }
  auto store = backend_->Open();
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto t = (*store)->GetTenant("odd");
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss) << t.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreSchemaTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace pagoda::tenancy
