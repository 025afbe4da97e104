// The same cases on every TenantStore backend: SQLite (a temp file) and
// PostgreSQL (a fresh database on the run's server; skipped with a message
// when PostgreSQL is absent).
#include "tenancy/tenant_store.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <tuple>

#include "tenancy/api_key.h"
#include "tenancy/key_admin.h"
#include "tenancy/store_schema.h"
#include "tenancy/tenant_cache.h"
#include "tenancy/usage_report.h"
#include "tenancy/store_backends.h"

namespace pagoda::tenancy {
namespace {

using testsupport::Backend;

constexpr int64_t kNow = 1'750'000'000'000;  // 2025-06-15

class TenantStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = Backend::Make(GetParam());
    if (!backend_->ok()) GTEST_SKIP() << backend_->why();
    auto s = backend_->Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  Tenant MakeTenant(const std::string& id, PlanKind plan = PlanKind::kServerless) {
    Tenant t;
    t.id = id;
    t.name = "Tenant " + id;
    t.plan = plan;
    if (plan == PlanKind::kDedicated) t.dedicated_deployment = "dep-" + id;
    auto r = store_->CreateTenant(t);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : t;
  }

  IssuedKey MakeKey(const std::string& tenant, std::vector<std::string> models = {}, int64_t expires_at = 0) {
    auto k = IssueKey(*store_, {tenant, "key of " + tenant, std::move(models), expires_at}, kNow);
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? *k : IssuedKey{};
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<TenantStore> store_;
};

TEST_P(TenantStoreTest, OpensAtTheLatestSchemaVersion) {
  auto v = store_->SchemaVersion();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, LatestSchemaVersion());
  // A second open finds nothing to migrate.
  auto again = backend_->Open();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*(*again)->SchemaVersion(), LatestSchemaVersion());
}

TEST_P(TenantStoreTest, CreatesTenantsWithGeneratedAndGivenIds) {
  Tenant t;
  t.name = "Acme";
  auto generated = store_->CreateTenant(t);
  ASSERT_TRUE(generated.ok()) << generated.status().ToString();
  EXPECT_EQ(generated->id.rfind("ten_", 0), 0u);
  EXPECT_GT(generated->created_at, 0);

  Tenant d;
  d.id = "acme-prod";
  d.plan = PlanKind::kDedicated;
  d.dedicated_deployment = "acme-llama";
  d.weight = 2.5;
  d.share_cache_across_keys = true;
  ASSERT_TRUE(store_->CreateTenant(d).ok());
  auto got = store_->GetTenant("acme-prod");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->plan, PlanKind::kDedicated);
  EXPECT_EQ(got->dedicated_deployment, "acme-llama");
  EXPECT_DOUBLE_EQ(got->weight, 2.5);
  EXPECT_TRUE(got->share_cache_across_keys);
  EXPECT_FALSE(got->disabled);

  auto all = store_->ListTenants();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

TEST_P(TenantStoreTest, RejectsBadTenantInputWithClearErrors) {
  for (const std::string& id : std::vector<std::string>{"x'; DROP TABLE tenants; --", "Upper", std::string(65, 'a'), "a b"}) {
    Tenant t;
    t.id = id;
    auto r = store_->CreateTenant(t);
    ASSERT_FALSE(r.ok()) << id;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
    EXPECT_NE(r.status().message().find("CreateTenant"), std::string::npos) << r.status().ToString();
  }
  Tenant weightless;
  weightless.id = "w";
  weightless.weight = 0;
  EXPECT_EQ(store_->CreateTenant(weightless).status().code(), StatusCode::kInvalidArgument);
  Tenant dedicated;
  dedicated.id = "d";
  dedicated.plan = PlanKind::kDedicated;  // without a deployment
  EXPECT_EQ(store_->CreateTenant(dedicated).status().code(), StatusCode::kInvalidArgument);
  Tenant binary;
  binary.id = "b";
  binary.name = std::string("bad\x01name", 8);
  EXPECT_EQ(store_->CreateTenant(binary).status().code(), StatusCode::kInvalidArgument);
  binary.name = "\xff\xfe";
  EXPECT_EQ(store_->CreateTenant(binary).status().code(), StatusCode::kInvalidArgument);

  MakeTenant("dup");
  Tenant dup;
  dup.id = "dup";
  EXPECT_EQ(store_->CreateTenant(dup).status().code(), StatusCode::kInvalidArgument);
  // The table survived the SQL-like id.
  auto all = store_->ListTenants();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
}

TEST_P(TenantStoreTest, UnknownTenantIsNotFound) {
  EXPECT_EQ(store_->GetTenant("nobody").status().code(), StatusCode::kNotFound);
  Tenant t;
  t.id = "nobody";
  EXPECT_EQ(store_->UpdateTenant(t).code(), StatusCode::kNotFound);
  auto key = IssueKey(*store_, {"nobody", "k", {}, 0}, kNow);
  EXPECT_EQ(key.status().code(), StatusCode::kNotFound) << key.status().ToString();
}

TEST_P(TenantStoreTest, UpdatesPlanWeightSharingAndDisabled) {
  Tenant t = MakeTenant("t1");
  const int64_t gen = *store_->Generation();
  t.plan = PlanKind::kProvisioned;
  t.weight = 4;
  t.share_cache_across_keys = true;
  t.disabled = true;
  ASSERT_TRUE(store_->UpdateTenant(t).ok());
  auto got = store_->GetTenant("t1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->plan, PlanKind::kProvisioned);
  EXPECT_DOUBLE_EQ(got->weight, 4);
  EXPECT_TRUE(got->share_cache_across_keys);
  EXPECT_TRUE(got->disabled);
  EXPECT_GT(*store_->Generation(), gen);
}

TEST_P(TenantStoreTest, FindsKeysByHashOnly) {
  MakeTenant("t1");
  IssuedKey k = MakeKey("t1");
  EXPECT_EQ(k.secret.rfind("pgd-", 0), 0u);
  EXPECT_EQ(k.key.hash, HashKey(k.secret));
  auto found = store_->FindKeyByHash(HashKey(k.secret));
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->id, k.key.id);
  EXPECT_EQ(found->tenant_id, "t1");
  // Nothing the store returns holds the secret.
  EXPECT_EQ(found->hash.find(k.secret), std::string::npos);

  auto wrong = store_->FindKeyByHash(HashKey(k.secret + "x"));
  EXPECT_EQ(wrong.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(wrong.status().message().find(k.secret), std::string::npos);
  // A pepper changes the hash: the same secret is unknown without it.
  EXPECT_EQ(store_->FindKeyByHash(HashKey(k.secret, "pepper")).status().code(), StatusCode::kNotFound);
}

TEST_P(TenantStoreTest, ListsScopedKeysOfATenant) {
  MakeTenant("t1");
  MakeTenant("t2");
  IssuedKey a = MakeKey("t1", {"llama-3-8b", "fast"});
  IssuedKey b = MakeKey("t1");
  MakeKey("t2");
  auto keys = store_->ListKeys("t1");
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 2u);
  std::map<std::string, ApiKey> by_id;
  for (const ApiKey& k : *keys) by_id[k.id] = k;
  EXPECT_EQ(by_id[a.key.id].models, (std::vector<std::string>{"llama-3-8b", "fast"}));
  EXPECT_TRUE(by_id[a.key.id].AllowsModel("fast"));
  EXPECT_FALSE(by_id[a.key.id].AllowsModel("other"));
  EXPECT_TRUE(by_id[b.key.id].models.empty());
  EXPECT_TRUE(by_id[b.key.id].AllowsModel("anything"));
}

TEST_P(TenantStoreTest, RevocationIsVisibleToASecondProcessOnTheNextRequest) {
  MakeTenant("t1");
  IssuedKey k = MakeKey("t1");
  // A second store object on the same database: another gateway process.
  auto other = backend_->Open();
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  TenantCache gateway(**other);
  auto auth = gateway.Authenticate("Bearer " + k.secret, kNow);
  ASSERT_TRUE(auth.ok()) << auth.status().ToString();
  EXPECT_EQ(auth->tenant.id, "t1");
  ASSERT_TRUE(gateway.Authenticate("Bearer " + k.secret, kNow).ok());  // now cached

  ASSERT_TRUE(store_->RevokeKey(k.key.id, kNow + 1).ok());
  auto after = gateway.Authenticate("Bearer " + k.secret, kNow + 2);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), StatusCode::kNotFound);
  EXPECT_NE(after.status().message().find("revoked"), std::string::npos) << after.status().ToString();
  EXPECT_EQ(after.status().message().find(k.secret), std::string::npos);

  // Disabling a tenant is seen the same way.
  IssuedKey k2 = MakeKey("t1");
  ASSERT_TRUE(gateway.Authenticate(k2.secret, kNow).ok());
  Tenant t = *store_->GetTenant("t1");
  t.disabled = true;
  ASSERT_TRUE(store_->UpdateTenant(t).ok());
  EXPECT_EQ(gateway.Authenticate(k2.secret, kNow).status().code(), StatusCode::kNotFound);
}

TEST_P(TenantStoreTest, ExpiredKeysAreRefused) {
  MakeTenant("t1");
  IssuedKey k = MakeKey("t1", {}, kNow + 1000);
  TenantCache cache(*store_);
  EXPECT_TRUE(cache.Authenticate(k.secret, kNow + 999).ok());
  auto late = cache.Authenticate(k.secret, kNow + 1000);
  EXPECT_EQ(late.status().code(), StatusCode::kNotFound);
  EXPECT_NE(late.status().message().find("expired"), std::string::npos);
}

TEST_P(TenantStoreTest, RotationRevokesOrGivesAGracePeriod) {
  MakeTenant("t1");
  IssuedKey old = MakeKey("t1", {"m1"});
  TenantCache cache(*store_);
  auto now_rotated = RotateKey(*store_, old.key.id, 0, kNow + 10);
  ASSERT_TRUE(now_rotated.ok()) << now_rotated.status().ToString();
  EXPECT_NE(now_rotated->secret, old.secret);
  EXPECT_EQ(now_rotated->key.models, old.key.models);
  EXPECT_FALSE(cache.Authenticate(old.secret, kNow + 11).ok());
  EXPECT_TRUE(cache.Authenticate(now_rotated->secret, kNow + 11).ok());
  // Rotating a revoked key is refused.
  EXPECT_EQ(RotateKey(*store_, old.key.id, 0, kNow).status().code(), StatusCode::kFailedPrecondition);

  auto graced = RotateKey(*store_, now_rotated->key.id, 60'000, kNow + 20);
  ASSERT_TRUE(graced.ok()) << graced.status().ToString();
  EXPECT_TRUE(cache.Authenticate(now_rotated->secret, kNow + 20 + 59'999).ok());
  EXPECT_FALSE(cache.Authenticate(now_rotated->secret, kNow + 20 + 60'000).ok());
  EXPECT_TRUE(cache.Authenticate(graced->secret, kNow + 20 + 60'000).ok());
  EXPECT_EQ(RotateKey(*store_, "key_unknown", 0, kNow).status().code(), StatusCode::kNotFound);
}

TEST_P(TenantStoreTest, BadKeyStringsFailClearlyWithoutEcho) {
  MakeTenant("t1");
  MakeKey("t1");
  TenantCache cache(*store_);
  const std::string sql_like = "pgd-' OR '1'='1'; DROP TABLE api_keys; --";
  auto r = cache.Authenticate("Bearer " + sql_like, kNow);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();  // has spaces
  auto r2 = cache.Authenticate("pgd-'OR'1'='1';--", kNow);
  EXPECT_EQ(r2.status().code(), StatusCode::kNotFound) << r2.status().ToString();
  const std::string huge(10'000, 'k');
  auto r3 = cache.Authenticate(huge, kNow);
  EXPECT_EQ(r3.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r3.status().message().find("kkkk"), std::string::npos);
  const std::string binary("pgd-\x00\x01\xff\xfe", 8);
  auto r4 = cache.Authenticate(binary, kNow);
  EXPECT_EQ(r4.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Authenticate("", kNow).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.Authenticate("Bearer ", kNow).status().code(), StatusCode::kInvalidArgument);
  // The keys table is intact.
  auto keys = store_->ListKeys("t1");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(keys->size(), 1u);
}

TEST_P(TenantStoreTest, LimitsRoundTrip) {
  MakeTenant("t1");
  IssuedKey k = MakeKey("t1");
  LimitRule tenant_any{LimitScope::kTenant, "t1", "", {600, 100000, 8}};
  LimitRule key_model{LimitScope::kKey, k.key.id, "llama", {60, 0, 2}};
  ASSERT_TRUE(store_->SetLimits(tenant_any).ok());
  ASSERT_TRUE(store_->SetLimits(key_model).ok());
  auto got = store_->GetLimits(LimitScope::kKey, k.key.id, "llama");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->limits.rpm, 60);
  EXPECT_EQ(got->limits.tpm, 0);
  EXPECT_EQ(got->limits.concurrent, 2);
  key_model.limits.rpm = 120;
  ASSERT_TRUE(store_->SetLimits(key_model).ok());  // replaces
  EXPECT_EQ(store_->GetLimits(LimitScope::kKey, k.key.id, "llama")->limits.rpm, 120);
  auto listed = store_->ListLimits("t1");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->size(), 2u);

  TenantCache cache(*store_);
  auto auth = cache.Authenticate(k.secret, kNow);
  ASSERT_TRUE(auth.ok());
  auto rules = cache.LimitsFor(*auth, "llama");
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[0].scope, LimitScope::kKey);  // most specific first
  EXPECT_EQ((*rules)[1].scope, LimitScope::kTenant);
  EXPECT_EQ(cache.LimitsFor(*auth, "other")->size(), 1u);

  EXPECT_EQ(store_->SetLimits({LimitScope::kTenant, "t1", "", {-1, 0, 0}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->SetLimits({LimitScope::kKey, "key_nope", "", {1, 0, 0}}).code(), StatusCode::kNotFound);
  ASSERT_TRUE(store_->DeleteLimits(LimitScope::kKey, k.key.id, "llama").ok());
  EXPECT_EQ(store_->GetLimits(LimitScope::kKey, k.key.id, "llama").status().code(), StatusCode::kNotFound);
  // The cache sees the deletion on its next request.
  ASSERT_TRUE(cache.Authenticate(k.secret, kNow).ok());
  EXPECT_EQ(cache.LimitsFor(*auth, "llama")->size(), 1u);
}

TEST_P(TenantStoreTest, ReservationsAndPricesRoundTrip) {
  MakeTenant("t1", PlanKind::kProvisioned);
  ASSERT_TRUE(store_->SetReservation({"t1", "llama", 1500}).ok());
  ASSERT_TRUE(store_->SetReservation({"t1", "llama", 2000}).ok());
  EXPECT_EQ(store_->SetReservation({"t9", "llama", 10}).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->SetReservation({"t1", "llama", 0}).code(), StatusCode::kInvalidArgument);
  auto res = store_->ListReservations();
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->size(), 1u);
  EXPECT_DOUBLE_EQ((*res)[0].tokens_per_second, 2000);
  TenantCache cache(*store_);
  auto r = cache.ReservationFor("t1", "llama");
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_DOUBLE_EQ((*r)->tokens_per_second, 2000);
  EXPECT_FALSE(cache.ReservationFor("t1", "other")->has_value());

  ASSERT_TRUE(store_->SetPrice({"llama", 0.2, 0.05, 0.6, 3.5}).ok());
  ASSERT_TRUE(store_->SetPrice({"qwen", 0.1, 0.01, 0.3, 0}).ok());
  ASSERT_TRUE(store_->SetPrice({"qwen", 0.15, 0.02, 0.35, 0}).ok());
  EXPECT_EQ(store_->SetPrice({"bad", -1, 0, 0, 0}).code(), StatusCode::kInvalidArgument);
  auto prices = store_->ListPrices();
  ASSERT_TRUE(prices.ok());
  ASSERT_EQ(prices->size(), 2u);
  EXPECT_EQ((*prices)[1].model, "qwen");
  EXPECT_DOUBLE_EQ((*prices)[1].input_per_mtok, 0.15);
  EXPECT_DOUBLE_EQ((*prices)[0].replica_hour, 3.5);
  ASSERT_TRUE(store_->DeletePrice("qwen").ok());
  EXPECT_EQ(store_->ListPrices()->size(), 1u);
  auto all = cache.Reservations();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  ASSERT_TRUE(store_->DeleteReservation("t1", "llama").ok());
  EXPECT_TRUE(store_->ListReservations()->empty());
  // Reservations() follows the generation without an Authenticate between.
  all = cache.Reservations();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
  ASSERT_TRUE(store_->SetReservation({"t1", "qwen", 300}).ok());
  all = cache.Reservations();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].model, "qwen");
}

// Usage: random records, aggregated by the store and independently here.
struct Expected {
  int64_t requests = 0, errors = 0, prompt = 0, cached = 0, completion = 0;
  double cost = 0;
};

TEST_P(TenantStoreTest, AggregatesUsageByTenantKeyModelAndDayWithCosts) {
  const std::vector<Price> prices = {{"llama", 0.2, 0.05, 0.6, 0}, {"qwen", 1.5, 0.5, 2.0, 0}};
  for (const Price& p : prices) ASSERT_TRUE(store_->SetPrice(p).ok());
  std::mt19937 rng(7);
  std::vector<UsageRecord> records;
  const int64_t day0 = DayStart(kNow);
  for (int i = 0; i < 600; ++i) {
    UsageRecord r;
    r.request_id = "req-" + std::to_string(i);
    r.tenant_id = "t" + std::to_string(rng() % 3);
    r.key_id = r.tenant_id + "-k" + std::to_string(rng() % 2);
    r.model = rng() % 3 ? "llama" : (rng() % 2 ? "qwen" : "unpriced");
    r.deployment = "d1";
    r.version = "v1";
    r.prompt_tokens = rng() % 5000;
    r.cached_tokens = r.prompt_tokens ? rng() % r.prompt_tokens : 0;
    r.completion_tokens = rng() % 2000;
    r.total_ms = rng() % 10000;
    r.ttft_ms = rng() % 500;
    r.status = rng() % 10 ? UsageStatus::kOk : UsageStatus::kError;
    r.started_at_ms = day0 + static_cast<int64_t>(rng() % 3) * kDayMs + rng() % kDayMs;
    records.push_back(r);
  }
  for (size_t i = 0; i < records.size(); i += 256) {
    const size_t n = std::min<size_t>(256, records.size() - i);
    ASSERT_TRUE(store_->AppendUsage(std::span(records).subspan(i, n)).ok());
  }

  auto price_of = [&](const std::string& model) -> const Price* {
    for (const Price& p : prices) {
      if (p.model == model) return &p;
    }
    return nullptr;
  };
  for (int mask = 0; mask < 16; ++mask) {
    UsageQuery q;
    q.by_tenant = mask & 1;
    q.by_key = mask & 2;
    q.by_model = mask & 4;
    q.by_day = mask & 8;
    std::map<std::tuple<std::string, std::string, std::string, int64_t>, Expected> want;
    for (const UsageRecord& r : records) {
      auto& e = want[{q.by_tenant ? r.tenant_id : "", q.by_key ? r.key_id : "", q.by_model ? r.model : "",
                      q.by_day ? DayStart(r.started_at_ms) : 0}];
      e.requests++;
      e.errors += r.status != UsageStatus::kOk;
      e.prompt += r.prompt_tokens;
      e.cached += r.cached_tokens;
      e.completion += r.completion_tokens;
      if (const Price* p = price_of(r.model)) {
        e.cost += ((r.prompt_tokens - r.cached_tokens) * p->input_per_mtok + r.cached_tokens * p->cached_input_per_mtok +
                   r.completion_tokens * p->output_per_mtok) /
                  1e6;
      }
    }
    auto rows = store_->QueryUsage(q);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    ASSERT_EQ(rows->size(), want.size()) << "mask " << mask;
    auto report = BuildUsageReport(*store_, q);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    ASSERT_EQ(report->rows.size(), want.size()) << "mask " << mask;
    for (size_t i = 0; i < rows->size(); ++i) {
      const UsageRow& row = (*rows)[i];
      const Expected& e = want[{row.tenant_id, row.key_id, row.model, row.day_ms}];
      EXPECT_EQ(row.requests, e.requests) << "mask " << mask;
      EXPECT_EQ(row.errors, e.errors);
      EXPECT_EQ(row.prompt_tokens, e.prompt);
      EXPECT_EQ(row.cached_tokens, e.cached);
      EXPECT_EQ(row.completion_tokens, e.completion);
      const UsageRow& priced = report->rows[i];
      EXPECT_EQ(std::tie(priced.tenant_id, priced.key_id, priced.model, priced.day_ms),
                std::tie(row.tenant_id, row.key_id, row.model, row.day_ms));
      EXPECT_NEAR(priced.cost, e.cost, 1e-9 * std::max(1.0, e.cost)) << "mask " << mask;
    }
    EXPECT_EQ(report->unpriced_models, std::vector<std::string>{"unpriced"});
  }

  // Filters: one tenant, one day.
  UsageQuery q;
  q.tenant_id = "t1";
  q.from_ms = day0 + kDayMs;
  q.to_ms = day0 + 2 * kDayMs;
  int64_t want = 0;
  for (const UsageRecord& r : records) want += r.tenant_id == "t1" && r.started_at_ms >= q.from_ms && r.started_at_ms < q.to_ms;
  auto rows = store_->QueryUsage(q);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].requests, want);
  UsageQuery none;
  none.by_tenant = false;
  none.tenant_id = "nobody";
  EXPECT_TRUE(store_->QueryUsage(none)->empty());
}

TEST_P(TenantStoreTest, AppendUsageIsIdempotentAndAllOrNothing) {
  UsageRecord r;
  r.request_id = "req-1";
  r.tenant_id = "t1";
  r.prompt_tokens = 10;
  r.started_at_ms = kNow;
  std::vector<UsageRecord> batch = {r, r};  // the same request twice
  batch[1].request_id = "req-2";
  ASSERT_TRUE(store_->AppendUsage(batch).ok());
  ASSERT_TRUE(store_->AppendUsage(batch).ok());  // a retried batch
  auto rows = store_->QueryUsage({});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].requests, 2);
  EXPECT_EQ((*rows)[0].prompt_tokens, 20);

  std::vector<UsageRecord> bad = {r, r};
  bad[0].request_id = "req-3";
  bad[1].request_id = "";  // invalid: the whole batch is refused
  EXPECT_EQ(store_->AppendUsage(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*store_->QueryUsage({}))[0].requests, 2);

  auto listed = store_->ListUsage("t1", 0, INT64_MAX, 10);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].prompt_tokens, 10);
  EXPECT_EQ((*listed)[0].status, UsageStatus::kOk);
}

TEST_P(TenantStoreTest, MetersAndPricesReplicaHours) {
  MakeTenant("ded", PlanKind::kDedicated);
  ASSERT_TRUE(store_->SetPrice({"llama", 0.2, 0.05, 0.6, 4.0}).ok());
  const int64_t day = DayStart(kNow);
  ASSERT_TRUE(store_->AddReplicaHours({"ded", "dep-ded", "llama", day, 1.5}).ok());
  ASSERT_TRUE(store_->AddReplicaHours({"ded", "dep-ded", "llama", day, 0.5}).ok());  // adds
  ASSERT_TRUE(store_->AddReplicaHours({"ded", "dep-ded", "llama", day + kDayMs, 3}).ok());
  EXPECT_EQ(store_->AddReplicaHours({"ded", "dep-ded", "llama", day + 5, 1}).code(), StatusCode::kInvalidArgument);
  UsageRecord r;
  r.request_id = "r1";
  r.tenant_id = "ded";
  r.key_id = "k";
  r.model = "llama";
  r.prompt_tokens = 1'000'000;
  r.completion_tokens = 1'000'000;
  r.started_at_ms = kNow;
  ASSERT_TRUE(store_->AppendUsage(std::span(&r, 1)).ok());
  UsageQuery q;
  q.by_day = true;
  auto report = BuildUsageReport(*store_, q);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->rows.size(), 2u);
  EXPECT_DOUBLE_EQ(report->rows[0].replica_hours, 2.0);
  EXPECT_NEAR(report->rows[0].cost, 0.2 + 0.6 + 2.0 * 4.0, 1e-9);
  EXPECT_NEAR(report->rows[1].cost, 3 * 4.0, 1e-9);
  EXPECT_NEAR(report->total.cost, 0.8 + 20.0, 1e-9);
}

TEST_P(TenantStoreTest, PricesBatchTierTokensWithTheBatchFactor) {
  Price m{"m", 0.15, 0.075, 0.6, 0};
  m.batch_factor = 0.5;
  ASSERT_TRUE(store_->SetPrice(m).ok());
  ASSERT_TRUE(store_->SetPrice({"full", 1.0, 1.0, 1.0, 0}).ok());  // batch_factor 1: no discount
  Price zero = m;
  zero.model = "zero";
  zero.batch_factor = 0;
  EXPECT_EQ(store_->SetPrice(zero).code(), StatusCode::kInvalidArgument);
  zero.batch_factor = 1.5;
  EXPECT_EQ(store_->SetPrice(zero).code(), StatusCode::kInvalidArgument);
  auto record = [](std::string id, std::string model, int64_t prompt, int64_t cached, int64_t completion,
                   WorkloadClass tier) {
    UsageRecord r;
    r.request_id = std::move(id);
    r.tenant_id = "t1";
    r.key_id = "k1";
    r.model = std::move(model);
    r.prompt_tokens = prompt;
    r.cached_tokens = cached;
    r.completion_tokens = completion;
    r.started_at_ms = kNow;
    r.service_tier = tier;
    return r;
  };
  const std::vector<UsageRecord> records = {
      record("r1", "m", 1'000'000, 200'000, 300'000, WorkloadClass::kInteractive),
      record("r2", "m", 234'567, 34'567, 45'678, WorkloadClass::kRealtime),
      record("r3", "m", 7'000'000, 600'000, 800'000, WorkloadClass::kBatch),
      record("r4", "m", 654'321, 54'321, 76'543, WorkloadClass::kBatch),
      record("r5", "full", 1'000'000, 0, 1'000'000, WorkloadClass::kBatch),
  };
  ASSERT_TRUE(store_->AppendUsage(records).ok());
  // By hand, float64: m non-batch (1234567 - 234567 uncached, 234567 cached,
  // 345678 out) = 0.15 + 0.017592525 + 0.2074068 = 0.374999325; m batch
  // (7654321 - 654321, 654321, 876543) = (1.05 + 0.049074075 + 0.5259258) * 0.5
  // = 0.8124999375; full batch = 2.0 * 1.
  UsageQuery q;
  auto report = BuildUsageReport(*store_, q);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->rows.size(), 1u);
  EXPECT_NEAR(report->rows[0].cost, 0.374999325 + 0.8124999375 + 2.0, 1e-12);
  EXPECT_EQ(report->rows[0].requests, 5);

  q.by_tier = true;
  q.model = "m";
  auto rows = store_->QueryUsage(q);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].service_tier, "batch");
  EXPECT_EQ((*rows)[0].prompt_tokens, 7'654'321);
  EXPECT_EQ((*rows)[1].service_tier, "interactive");
  EXPECT_EQ((*rows)[2].service_tier, "realtime");
  auto tiers = BuildUsageReport(*store_, q);
  ASSERT_TRUE(tiers.ok());
  ASSERT_EQ(tiers->rows.size(), 3u);
  EXPECT_NEAR(tiers->rows[0].cost, 0.8124999375, 1e-12);
  EXPECT_NEAR(tiers->rows[1].cost + tiers->rows[2].cost, 0.374999325, 1e-12);
  auto listed = store_->ListUsage("t1", 0, INT64_MAX, 10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 5u);
  EXPECT_EQ((*listed)[2].service_tier, WorkloadClass::kBatch);
}

TEST_P(TenantStoreTest, KeySecretsNeverReachTheDatabaseFiles) {
  MakeTenant("t1");
  std::vector<std::string> secrets;
  for (int i = 0; i < 40; ++i) secrets.push_back(MakeKey("t1", {"llama"}).secret);
  auto rotated = RotateKey(*store_, store_->ListKeys("t1")->front().id, 0, kNow);
  ASSERT_TRUE(rotated.ok());
  secrets.push_back(rotated->secret);
  TenantCache cache(*store_);
  std::vector<UsageRecord> usage;
  for (int i = 0; i < 200; ++i) {
    auto auth = cache.Authenticate("Bearer " + secrets[i % secrets.size()], kNow);
    UsageRecord r;
    r.request_id = "req-" + std::to_string(i);
    r.tenant_id = "t1";
    r.key_id = auth.ok() ? auth->key.id : "";
    r.model = "llama";
    r.started_at_ms = kNow;
    usage.push_back(r);
  }
  ASSERT_TRUE(store_->AppendUsage(usage).ok());
  // Scanned live (SQLite: main file, -wal and -shm) and after closing
  // (SQLite checkpoints the WAL into the main file).
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) store_.reset();
    auto files = backend_->Files();
    ASSERT_FALSE(files.empty());
    const auto leaks = testsupport::FindInFiles(files, "pgd-", secrets);
    EXPECT_TRUE(leaks.empty()) << leaks.front();
    // The hashes are there: the scan does see the database's bytes.
    const std::string hash = HashKey(secrets[1]);
    EXPECT_FALSE(testsupport::FindInFiles(files, hash.substr(0, 8), {hash}).empty()) << "pass " << pass;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TenantStoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

TEST(OpenTenantStoreTest, RejectsUnknownSchemes) {
  auto s = OpenTenantStore("mysql://x/y");
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pagoda::tenancy
