#include "tenancy/sql_tenant_store.h"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "tenancy/api_key.h"
#include "tenancy/store_schema.h"
#include "tenancy/usage_sql.h"

namespace pagoda::tenancy {
namespace {

using Params = std::vector<SqlValue>;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

SqlValue Text(std::string_view s) { return std::string(s); }
SqlValue Int(int64_t v) { return v; }

constexpr const char* kTenantCols =
    "id, name, plan, weight, share_cache_across_keys, dedicated_deployment, disabled, created_at, max_class, "
    "default_class";
constexpr const char* kKeyCols =
    "id, tenant_id, name, hash, models, created_at, expires_at, revoked_at, max_class";
constexpr const char* kUsageCols =
    "request_id, tenant_id, key_id, model, deployment, version, prompt_tokens, cached_tokens, completion_tokens, "
    "queue_ms, ttft_ms, total_ms, status, http_status, started_at_ms, service_tier";
constexpr const char* kPriceCols =
    "model, input_per_mtok, cached_input_per_mtok, output_per_mtok, replica_hour, batch_factor";
constexpr const char* kBumpGeneration = "UPDATE store_generation SET generation = generation + 1 WHERE id = 1";

// '' = unset (the plan's or the tenant's class).
SqlValue OptionalClassText(const std::optional<WorkloadClass>& c) {
  return c ? Text(WorkloadClassName(*c)) : Text("");
}

Result<std::optional<WorkloadClass>> OptionalClassFromText(const std::string& s, const std::string& what) {
  if (s.empty()) return std::optional<WorkloadClass>();
  auto c = ParseStoredClass(s);
  if (!c.ok()) return DataLoss(what + " has an unknown workload class");
  return std::optional<WorkloadClass>(*c);
}

Result<Tenant> TenantFromRow(const SqlRow& r) {
  Tenant t;
  t.id = SqlText(r[0]);
  t.name = SqlText(r[1]);
  PAGODA_ASSIGN_OR_RETURN(t.plan, ParsePlanKind(SqlText(r[2])));
  t.weight = SqlReal(r[3]);
  t.share_cache_across_keys = SqlInt(r[4]) != 0;
  t.dedicated_deployment = SqlText(r[5]);
  t.disabled = SqlInt(r[6]) != 0;
  t.created_at = SqlInt(r[7]);
  PAGODA_ASSIGN_OR_RETURN(t.max_class, OptionalClassFromText(SqlText(r[8]), "tenant " + t.id));
  auto d = ParseStoredClass(SqlText(r[9]));
  if (!d.ok()) return DataLoss("tenant " + t.id + " has an unknown default workload class");
  t.default_class = *d;
  return t;
}

Result<ApiKey> KeyFromRow(const SqlRow& r) {
  ApiKey k;
  k.id = SqlText(r[0]);
  k.tenant_id = SqlText(r[1]);
  k.name = SqlText(r[2]);
  k.hash = SqlText(r[3]);
  const nlohmann::json models = nlohmann::json::parse(SqlText(r[4]), nullptr, /*allow_exceptions=*/false);
  if (!models.is_array()) return DataLoss("key " + k.id + " has a malformed model list");
  for (const auto& m : models) {
    if (!m.is_string()) return DataLoss("key " + k.id + " has a malformed model list");
    k.models.push_back(m.get<std::string>());
  }
  k.created_at = SqlInt(r[5]);
  k.expires_at = SqlInt(r[6]);
  k.revoked_at = SqlInt(r[7]);
  PAGODA_ASSIGN_OR_RETURN(k.max_class, OptionalClassFromText(SqlText(r[8]), "key " + k.id));
  return k;
}

std::string ModelsJson(const std::vector<std::string>& models) { return nlohmann::json(models).dump(); }

LimitRule LimitFromRow(const SqlRow& r) {
  LimitRule l;
  l.scope = SqlText(r[0]) == "key" ? LimitScope::kKey : LimitScope::kTenant;
  l.scope_id = SqlText(r[1]);
  l.model = SqlText(r[2]);
  l.limits.rpm = SqlInt(r[3]);
  l.limits.tpm = SqlInt(r[4]);
  l.limits.concurrent = SqlInt(r[5]);
  return l;
}

Status InsertKeyRow(SqlConnection& c, const ApiKey& k) {
  const Params p = {Text(k.id),          Text(k.tenant_id),  Text(k.name),       Text(k.hash),
                    ModelsJson(k.models), Int(k.created_at), Int(k.expires_at), Int(k.revoked_at),
                    OptionalClassText(k.max_class)};
  return c.Exec(std::string("INSERT INTO api_keys (") + kKeyCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", p)
      .status();
}

Status RequireTenant(SqlConnection& c, std::string_view tenant_id) {
  const Params p = {Text(tenant_id)};
  PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("SELECT 1 FROM tenants WHERE id = ?", p));
  if (rows.empty()) return NotFound("unknown tenant " + std::string(tenant_id));
  return Status::Ok();
}

// The WHERE clause and parameters shared by usage and replica-hour queries.
void AppendFilters(const UsageQuery& q, bool with_key, const char* time_col, std::string* sql, Params* p) {
  *sql += std::string(" WHERE ") + time_col + " >= ? AND " + time_col + " < ?";
  p->push_back(Int(q.from_ms));
  p->push_back(Int(q.to_ms));
  if (!q.tenant_id.empty()) {
    *sql += " AND tenant_id = ?";
    p->push_back(Text(q.tenant_id));
  }
  if (with_key && !q.key_id.empty()) {
    *sql += " AND key_id = ?";
    p->push_back(Text(q.key_id));
  }
  if (!q.model.empty()) {
    *sql += " AND model = ?";
    p->push_back(Text(q.model));
  }
}

// "SELECT <group cols or constants>" + GROUP BY of the grouped ones.
struct Grouping {
  std::string select;
  std::string group_by;
};

// Columns: tenant, key, model, day, service tier. Replica-hours have no key
// and no tier (`usage` false).
Grouping GroupColumns(const UsageQuery& q, bool usage, const char* day_expr) {
  Grouping g;
  std::vector<std::string> grouped;
  auto add = [&](bool on, const std::string& expr) {
    g.select += (on ? expr : std::string("''")) + ", ";
    if (on) grouped.push_back(expr);
  };
  add(q.by_tenant, "tenant_id");
  add(usage && q.by_key, "key_id");
  add(q.by_model, "model");
  if (q.by_day) {
    g.select += std::string(day_expr) + ", ";
    grouped.push_back(day_expr);
  } else {
    g.select += "0, ";
  }
  add(usage && q.by_tier, "service_tier");
  for (size_t i = 0; i < grouped.size(); ++i) g.group_by += (i ? ", " : "") + grouped[i];
  return g;
}

}  // namespace

SqlTenantStore::SqlTenantStore(std::unique_ptr<SqlDatabase> db) : db_(std::move(db)) {}

Status SqlTenantStore::Fail(const char* op, const Status& st) const {
  return st.WithContext(db_->Describe() + ": " + op);
}

Status SqlTenantStore::AdminWrite(const char* op, const std::function<Status(SqlConnection&)>& fn) {
  Status st = db_->Transact(true, [&](SqlConnection& c) -> Status {
    PAGODA_RETURN_IF_ERROR(fn(c));
    return c.Exec(kBumpGeneration).status();
  });
  return st.ok() ? st : Fail(op, st);
}

Result<int> SqlTenantStore::SchemaVersion() {
  auto v = ReadSchemaVersion(*db_);
  if (!v.ok()) return Fail("SchemaVersion", v.status());
  return v;
}

Result<int64_t> SqlTenantStore::Generation() {
  auto rows = db_->Query("SELECT generation FROM store_generation WHERE id = 1");
  if (!rows.ok()) return Fail("Generation", rows.status());
  if (rows->empty()) return Fail("Generation", DataLoss("the store_generation row is missing"));
  return SqlInt((*rows)[0][0]);
}

// ---- tenants ----

Result<Tenant> SqlTenantStore::CreateTenant(const Tenant& tenant) {
  Tenant t = tenant;
  if (t.id.empty()) {
    auto id = RandomId("ten_");
    if (!id.ok()) return Fail("CreateTenant", id.status());
    t.id = *id;
  }
  if (t.created_at == 0) t.created_at = NowMs();
  if (Status v = ValidateTenant(t); !v.ok()) return Fail("CreateTenant", v);
  Status st = AdminWrite("CreateTenant", [&](SqlConnection& c) -> Status {
    const Params p = {Text(t.id), Text(t.name), Text(PlanKindName(t.plan)), t.weight,
                      Int(t.share_cache_across_keys), Text(t.dedicated_deployment), Int(t.disabled),
                      Int(t.created_at), OptionalClassText(t.max_class), Text(WorkloadClassName(t.default_class))};
    const Params idp = {Text(t.id)};
    PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("SELECT 1 FROM tenants WHERE id = ?", idp));
    if (!rows.empty()) return InvalidArgument("tenant " + t.id + " already exists");
    return c.Exec(std::string("INSERT INTO tenants (") + kTenantCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", p)
        .status();
  });
  if (!st.ok()) return st;
  return t;
}

Result<Tenant> SqlTenantStore::GetTenant(std::string_view id) {
  if (Status v = ValidateTenantId(id); !v.ok()) return Fail("GetTenant", v);
  const Params p = {Text(id)};
  auto rows = db_->Query(std::string("SELECT ") + kTenantCols + " FROM tenants WHERE id = ?", p);
  if (!rows.ok()) return Fail("GetTenant", rows.status());
  if (rows->empty()) return Fail("GetTenant", NotFound("unknown tenant " + std::string(id)));
  auto t = TenantFromRow((*rows)[0]);
  if (!t.ok()) return Fail("GetTenant", t.status());
  return t;
}

Result<std::vector<Tenant>> SqlTenantStore::ListTenants() {
  auto rows = db_->Query(std::string("SELECT ") + kTenantCols + " FROM tenants ORDER BY id");
  if (!rows.ok()) return Fail("ListTenants", rows.status());
  std::vector<Tenant> out;
  for (const SqlRow& r : *rows) {
    auto t = TenantFromRow(r);
    if (!t.ok()) return Fail("ListTenants", t.status());
    out.push_back(std::move(*t));
  }
  return out;
}

Status SqlTenantStore::UpdateTenant(const Tenant& t) {
  if (Status v = ValidateTenant(t); !v.ok()) return Fail("UpdateTenant", v);
  return AdminWrite("UpdateTenant", [&](SqlConnection& c) -> Status {
    PAGODA_RETURN_IF_ERROR(RequireTenant(c, t.id));
    const Params p = {Text(t.name),
                      Text(PlanKindName(t.plan)),
                      t.weight,
                      Int(t.share_cache_across_keys),
                      Text(t.dedicated_deployment),
                      Int(t.disabled),
                      OptionalClassText(t.max_class),
                      Text(WorkloadClassName(t.default_class)),
                      Text(t.id)};
    return c.Exec("UPDATE tenants SET name = ?, plan = ?, weight = ?, share_cache_across_keys = ?, "
                  "dedicated_deployment = ?, disabled = ?, max_class = ?, default_class = ? WHERE id = ?",
                  p)
        .status();
  });
}

// ---- keys ----

Status SqlTenantStore::InsertKey(const ApiKey& key) {
  if (Status v = ValidateApiKey(key); !v.ok()) return Fail("InsertKey", v);
  return AdminWrite("InsertKey", [&](SqlConnection& c) -> Status {
    PAGODA_RETURN_IF_ERROR(RequireTenant(c, key.tenant_id));
    const Params p = {Text(key.id), Text(key.hash)};
    PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("SELECT 1 FROM api_keys WHERE id = ? OR hash = ?", p));
    if (!rows.empty()) return InvalidArgument("key " + key.id + " (or its hash) already exists");
    return InsertKeyRow(c, key);
  });
}

Result<ApiKey> SqlTenantStore::FindKeyByHash(std::string_view hash_hex) {
  const Params p = {Text(hash_hex)};
  auto rows = db_->Query(std::string("SELECT ") + kKeyCols + " FROM api_keys WHERE hash = ?", p);
  if (!rows.ok()) return Fail("FindKeyByHash", rows.status());
  if (rows->empty()) return Fail("FindKeyByHash", NotFound("no key has this hash"));
  auto k = KeyFromRow((*rows)[0]);
  if (!k.ok()) return Fail("FindKeyByHash", k.status());
  // The index found it; compare once more in constant time so that nothing
  // about the stored hash leaks through timing of later code paths.
  if (!HashesEqual(k->hash, hash_hex)) return Fail("FindKeyByHash", NotFound("no key has this hash"));
  return k;
}

Result<ApiKey> SqlTenantStore::GetKey(std::string_view key_id) {
  const Params p = {Text(key_id)};
  auto rows = db_->Query(std::string("SELECT ") + kKeyCols + " FROM api_keys WHERE id = ?", p);
  if (!rows.ok()) return Fail("GetKey", rows.status());
  if (rows->empty()) return Fail("GetKey", NotFound("unknown key " + std::string(key_id)));
  auto k = KeyFromRow((*rows)[0]);
  if (!k.ok()) return Fail("GetKey", k.status());
  return k;
}

Result<std::vector<ApiKey>> SqlTenantStore::ListKeys(std::string_view tenant_id) {
  const Params p = {Text(tenant_id)};
  auto rows =
      db_->Query(std::string("SELECT ") + kKeyCols + " FROM api_keys WHERE tenant_id = ? ORDER BY created_at, id", p);
  if (!rows.ok()) return Fail("ListKeys", rows.status());
  std::vector<ApiKey> out;
  for (const SqlRow& r : *rows) {
    auto k = KeyFromRow(r);
    if (!k.ok()) return Fail("ListKeys", k.status());
    out.push_back(std::move(*k));
  }
  return out;
}

Status SqlTenantStore::RevokeKey(std::string_view key_id, int64_t at_ms) {
  if (at_ms <= 0) return Fail("RevokeKey", InvalidArgument("revocation time must be > 0"));
  return AdminWrite("RevokeKey", [&](SqlConnection& c) -> Status {
    const Params idp = {Text(key_id)};
    PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("SELECT revoked_at FROM api_keys WHERE id = ?", idp));
    if (rows.empty()) return NotFound("unknown key " + std::string(key_id));
    const Params p = {Int(at_ms), Text(key_id)};
    return c.Exec("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at = 0", p).status();
  });
}

Status SqlTenantStore::RotateKey(std::string_view old_key_id, const ApiKey& new_key, int64_t old_key_ends_at,
                                 int64_t now_ms) {
  if (Status v = ValidateApiKey(new_key); !v.ok()) return Fail("RotateKey", v);
  return AdminWrite("RotateKey", [&](SqlConnection& c) -> Status {
    const Params idp = {Text(old_key_id)};
    PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("SELECT tenant_id, expires_at FROM api_keys WHERE id = ?", idp));
    if (rows.empty()) return NotFound("unknown key " + std::string(old_key_id));
    if (SqlText(rows[0][0]) != new_key.tenant_id) {
      return InvalidArgument("the new key belongs to another tenant than key " + std::string(old_key_id));
    }
    PAGODA_RETURN_IF_ERROR(InsertKeyRow(c, new_key));
    if (old_key_ends_at <= now_ms) {
      const Params p = {Int(now_ms), Text(old_key_id)};
      return c.Exec("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at = 0", p).status();
    }
    const int64_t expires = SqlInt(rows[0][1]);
    if (expires != 0 && expires <= old_key_ends_at) return Status::Ok();  // already ends sooner
    const Params p = {Int(old_key_ends_at), Text(old_key_id)};
    return c.Exec("UPDATE api_keys SET expires_at = ? WHERE id = ?", p).status();
  });
}

// ---- limits, reservations, prices ----

Status SqlTenantStore::SetLimits(const LimitRule& r) {
  if (Status v = ValidateLimitRule(r); !v.ok()) return Fail("SetLimits", v);
  return AdminWrite("SetLimits", [&](SqlConnection& c) -> Status {
    if (r.scope == LimitScope::kTenant) {
      PAGODA_RETURN_IF_ERROR(RequireTenant(c, r.scope_id));
    } else {
      const Params idp = {Text(r.scope_id)};
      PAGODA_ASSIGN_OR_RETURN(auto rows, c.Exec("SELECT 1 FROM api_keys WHERE id = ?", idp));
      if (rows.empty()) return NotFound("unknown key " + r.scope_id);
    }
    const Params p = {Text(LimitScopeName(r.scope)), Text(r.scope_id), Text(r.model),
                      Int(r.limits.rpm),           Int(r.limits.tpm),  Int(r.limits.concurrent)};
    return c.Exec("INSERT INTO limits (scope, scope_id, model, rpm, tpm, concurrent) VALUES (?, ?, ?, ?, ?, ?) "
                  "ON CONFLICT (scope, scope_id, model) DO UPDATE SET rpm = excluded.rpm, tpm = excluded.tpm, "
                  "concurrent = excluded.concurrent",
                  p)
        .status();
  });
}

Result<LimitRule> SqlTenantStore::GetLimits(LimitScope scope, std::string_view scope_id, std::string_view model) {
  const Params p = {Text(LimitScopeName(scope)), Text(scope_id), Text(model)};
  auto rows = db_->Query(
      "SELECT scope, scope_id, model, rpm, tpm, concurrent FROM limits WHERE scope = ? AND scope_id = ? AND model = ?",
      p);
  if (!rows.ok()) return Fail("GetLimits", rows.status());
  if (rows->empty()) return Fail("GetLimits", NotFound("no limits set for this scope and model"));
  return LimitFromRow((*rows)[0]);
}

Result<std::vector<LimitRule>> SqlTenantStore::ListLimits(std::string_view tenant_id) {
  std::string sql = "SELECT scope, scope_id, model, rpm, tpm, concurrent FROM limits";
  Params p;
  if (!tenant_id.empty()) {
    sql += " WHERE (scope = 'tenant' AND scope_id = ?) OR "
           "(scope = 'key' AND scope_id IN (SELECT id FROM api_keys WHERE tenant_id = ?))";
    p = {Text(tenant_id), Text(tenant_id)};
  }
  sql += " ORDER BY scope DESC, scope_id, model";
  auto rows = db_->Query(sql, p);
  if (!rows.ok()) return Fail("ListLimits", rows.status());
  std::vector<LimitRule> out;
  for (const SqlRow& r : *rows) out.push_back(LimitFromRow(r));
  return out;
}

Status SqlTenantStore::DeleteLimits(LimitScope scope, std::string_view scope_id, std::string_view model) {
  return AdminWrite("DeleteLimits", [&](SqlConnection& c) -> Status {
    const Params p = {Text(LimitScopeName(scope)), Text(scope_id), Text(model)};
    return c.Exec("DELETE FROM limits WHERE scope = ? AND scope_id = ? AND model = ?", p).status();
  });
}

Status SqlTenantStore::SetReservation(const Reservation& r) {
  if (Status v = ValidateReservation(r); !v.ok()) return Fail("SetReservation", v);
  return AdminWrite("SetReservation", [&](SqlConnection& c) -> Status {
    PAGODA_RETURN_IF_ERROR(RequireTenant(c, r.tenant_id));
    const Params p = {Text(r.tenant_id), Text(r.model), r.tokens_per_second};
    return c.Exec("INSERT INTO reservations (tenant_id, model, tokens_per_second) VALUES (?, ?, ?) "
                  "ON CONFLICT (tenant_id, model) DO UPDATE SET tokens_per_second = excluded.tokens_per_second",
                  p)
        .status();
  });
}

Status SqlTenantStore::DeleteReservation(std::string_view tenant_id, std::string_view model) {
  return AdminWrite("DeleteReservation", [&](SqlConnection& c) -> Status {
    const Params p = {Text(tenant_id), Text(model)};
    return c.Exec("DELETE FROM reservations WHERE tenant_id = ? AND model = ?", p).status();
  });
}

Result<std::vector<Reservation>> SqlTenantStore::ListReservations() {
  auto rows = db_->Query("SELECT tenant_id, model, tokens_per_second FROM reservations ORDER BY tenant_id, model");
  if (!rows.ok()) return Fail("ListReservations", rows.status());
  std::vector<Reservation> out;
  for (const SqlRow& r : *rows) out.push_back({SqlText(r[0]), SqlText(r[1]), SqlReal(r[2])});
  return out;
}

Status SqlTenantStore::SetPrice(const Price& pr) {
  if (Status v = ValidatePrice(pr); !v.ok()) return Fail("SetPrice", v);
  return AdminWrite("SetPrice", [&](SqlConnection& c) -> Status {
    const Params p = {Text(pr.model), pr.input_per_mtok, pr.cached_input_per_mtok, pr.output_per_mtok,
                      pr.replica_hour, pr.batch_factor};
    return c.Exec(std::string("INSERT INTO prices (") + kPriceCols +
                      ") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (model) DO UPDATE SET "
                      "input_per_mtok = excluded.input_per_mtok, "
                      "cached_input_per_mtok = excluded.cached_input_per_mtok, "
                      "output_per_mtok = excluded.output_per_mtok, replica_hour = excluded.replica_hour, "
                      "batch_factor = excluded.batch_factor",
                  p)
        .status();
  });
}

Status SqlTenantStore::DeletePrice(std::string_view model) {
  return AdminWrite("DeletePrice", [&](SqlConnection& c) -> Status {
    const Params p = {Text(model)};
    return c.Exec("DELETE FROM prices WHERE model = ?", p).status();
  });
}

Result<std::vector<Price>> SqlTenantStore::ListPrices() {
  auto rows = db_->Query(std::string("SELECT ") + kPriceCols + " FROM prices ORDER BY model");
  if (!rows.ok()) return Fail("ListPrices", rows.status());
  std::vector<Price> out;
  for (const SqlRow& r : *rows) {
    out.push_back({SqlText(r[0]), SqlReal(r[1]), SqlReal(r[2]), SqlReal(r[3]), SqlReal(r[4]), SqlReal(r[5])});
  }
  return out;
}

// ---- usage ----

Status SqlTenantStore::AppendUsage(std::span<const UsageRecord> records) {
  for (const UsageRecord& r : records) {
    if (Status v = ValidateUsageRecord(r); !v.ok()) return Fail("AppendUsage", v);
  }
  if (records.empty()) return Status::Ok();
  Status st = db_->Transact(true, [&](SqlConnection& c) { return InsertUsageRecords(c, records); });
  return st.ok() ? st : Fail("AppendUsage", st);
}

Result<std::vector<UsageRow>> SqlTenantStore::QueryUsage(const UsageQuery& q) {
  const Grouping g = GroupColumns(q, /*usage=*/true, "(started_at_ms / 86400000) * 86400000");
  std::string sql = "SELECT " + g.select +
                    "COUNT(*), COALESCE(SUM(CASE WHEN status <> 'ok' THEN 1 ELSE 0 END), 0), "
                    "COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(cached_tokens), 0), "
                    "COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(total_ms), 0), COALESCE(SUM(ttft_ms), 0) "
                    "FROM usage_records";
  Params p;
  AppendFilters(q, /*with_key=*/true, "started_at_ms", &sql, &p);
  if (!g.group_by.empty()) sql += " GROUP BY " + g.group_by + " ORDER BY " + g.group_by;
  auto rows = db_->Query(sql, p);
  if (!rows.ok()) return Fail("QueryUsage", rows.status());
  std::vector<UsageRow> out;
  for (const SqlRow& r : *rows) {
    UsageRow u;
    u.tenant_id = SqlText(r[0]);
    u.key_id = SqlText(r[1]);
    u.model = SqlText(r[2]);
    u.day_ms = SqlInt(r[3]);
    u.service_tier = SqlText(r[4]);
    u.requests = SqlInt(r[5]);
    if (u.requests == 0) continue;  // ungrouped aggregate over no rows
    u.errors = SqlInt(r[6]);
    u.prompt_tokens = SqlInt(r[7]);
    u.cached_tokens = SqlInt(r[8]);
    u.completion_tokens = SqlInt(r[9]);
    u.total_ms_sum = SqlInt(r[10]);
    u.ttft_ms_sum = SqlInt(r[11]);
    out.push_back(std::move(u));
  }
  return out;
}

Result<std::vector<UsageRecord>> SqlTenantStore::ListUsage(std::string_view tenant_id, int64_t from_ms,
                                                           int64_t to_ms, int64_t limit) {
  std::string sql = std::string("SELECT ") + kUsageCols + " FROM usage_records WHERE started_at_ms >= ? AND "
                                                          "started_at_ms < ?";
  Params p = {Int(from_ms), Int(to_ms)};
  if (!tenant_id.empty()) {
    sql += " AND tenant_id = ?";
    p.push_back(Text(tenant_id));
  }
  sql += " ORDER BY started_at_ms, id LIMIT ?";
  p.push_back(Int(limit));
  auto rows = db_->Query(sql, p);
  if (!rows.ok()) return Fail("ListUsage", rows.status());
  std::vector<UsageRecord> out;
  for (const SqlRow& r : *rows) {
    UsageRecord u;
    u.request_id = SqlText(r[0]);
    u.tenant_id = SqlText(r[1]);
    u.key_id = SqlText(r[2]);
    u.model = SqlText(r[3]);
    u.deployment = SqlText(r[4]);
    u.version = SqlText(r[5]);
    u.prompt_tokens = SqlInt(r[6]);
    u.cached_tokens = SqlInt(r[7]);
    u.completion_tokens = SqlInt(r[8]);
    u.queue_ms = SqlInt(r[9]);
    u.ttft_ms = SqlInt(r[10]);
    u.total_ms = SqlInt(r[11]);
    auto status = ParseUsageStatus(SqlText(r[12]));
    u.status = status.ok() ? *status : UsageStatus::kError;
    u.http_status = static_cast<int>(SqlInt(r[13]));
    u.started_at_ms = SqlInt(r[14]);
    auto tier = ParseStoredClass(SqlText(r[15]));
    u.service_tier = tier.ok() ? *tier : WorkloadClass::kInteractive;
    out.push_back(std::move(u));
  }
  return out;
}

Status SqlTenantStore::AddReplicaHours(const ReplicaHours& h) {
  if (Status v = ValidateTenantId(h.tenant_id); !v.ok()) return Fail("AddReplicaHours", v);
  if (h.deployment.empty() || !(h.hours >= 0) || h.day_ms != DayStart(h.day_ms)) {
    return Fail("AddReplicaHours", InvalidArgument("replica-hours need a deployment, hours >= 0 and a UTC day start"));
  }
  Status st = db_->Transact(true, [&](SqlConnection& c) -> Status {
    const Params p = {Text(h.tenant_id), Text(h.deployment), Text(h.model), Int(h.day_ms), h.hours};
    return c.Exec("INSERT INTO replica_hours (tenant_id, deployment, model, day_ms, hours) VALUES (?, ?, ?, ?, ?) "
                  "ON CONFLICT (tenant_id, deployment, model, day_ms) DO UPDATE SET "
                  "hours = replica_hours.hours + excluded.hours",
                  p)
        .status();
  });
  return st.ok() ? st : Fail("AddReplicaHours", st);
}

Result<std::vector<UsageRow>> SqlTenantStore::QueryReplicaHours(const UsageQuery& q) {
  const Grouping g = GroupColumns(q, /*usage=*/false, "day_ms");
  std::string sql = "SELECT " + g.select + "COUNT(*), COALESCE(SUM(hours), 0) FROM replica_hours";
  Params p;
  // A day row covers [day_ms, day_ms + 1 day): rows whose day starts in range.
  AppendFilters(q, /*with_key=*/false, "day_ms", &sql, &p);
  if (!g.group_by.empty()) sql += " GROUP BY " + g.group_by + " ORDER BY " + g.group_by;
  auto rows = db_->Query(sql, p);
  if (!rows.ok()) return Fail("QueryReplicaHours", rows.status());
  std::vector<UsageRow> out;
  for (const SqlRow& r : *rows) {
    if (SqlInt(r[5]) == 0) continue;
    UsageRow u;
    u.tenant_id = SqlText(r[0]);
    u.model = SqlText(r[2]);
    u.day_ms = SqlInt(r[3]);
    u.replica_hours = SqlReal(r[6]);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace pagoda::tenancy
