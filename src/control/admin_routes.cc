#include "control/admin_routes.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/json_text.h"
#include "base/log.h"
#include "control/admin_json.h"
#include "control/admin_request.h"
#include "tenancy/key_admin.h"
#include "tenancy/usage_report.h"

namespace pagoda::control {
namespace {

using json = nlohmann::json;
using http::Request;
using http::Response;
using tenancy::TenantStore;

// ---- the admin thread ----

// Runs posted tasks one at a time on its own thread. The destructor runs
// what is still queued, then joins.
class SerialWorker {
 public:
  explicit SerialWorker(size_t max_queued) : max_queued_(std::max<size_t>(max_queued, 1)), thread_([this] { Run(); }) {}
  ~SerialWorker() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // False (task not queued) when max_queued tasks are already waiting.
  bool Post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.size() >= max_queued_) return false;
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
    return true;
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members above exist
};

struct AdminContext {
  AdminContext(TenantStore& s, AdminRouteOptions o) : store(s), options(std::move(o)), worker(options.max_queued) {}

  int64_t Now() const {
    if (options.now_ms) return options.now_ms();
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  TenantStore& store;
  const AdminRouteOptions options;
  SerialWorker worker;  // last: destroyed (and drained) while the rest still exists
};

using AdminFn = Response (*)(AdminContext& ctx, const Request& req);

// ---- answers ----

Response Reply(int status, const json& j) { return Response::Json(status, api::DumpJson(j)); }
Response Reply(const api::ApiError& e) { return Response::Json(e.status, e.ToJsonString()); }

// A store failure: 404 / 400 where the store says so (after our own checks
// these are races), 503 when the store is unusable, 500 otherwise. The store's
// messages name the store and the operation, never a key secret.
Response StoreError(std::string_view op, const Status& st) {
  api::ApiError e;
  // The store's messages already name their operation; add ours when it differs.
  e.message = st.message().find(op) != std::string::npos ? st.message() : std::string(op) + ": " + st.message();
  switch (st.code()) {
    case StatusCode::kNotFound:
      e.status = 404;
      e.code = "not_found";
      break;
    case StatusCode::kInvalidArgument:
      e.status = 400;
      e.code = "invalid_value";
      break;
    case StatusCode::kIoError:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kDataLoss:
    case StatusCode::kDeadlineExceeded:
      e.status = 503;
      e.type = "server_error";
      e.code = "store_unavailable";
      e.message = "The tenant store is unavailable: " + e.message;
      break;
    default:
      e.status = 500;
      e.type = "server_error";
      e.code = "server_error";
  }
  if (e.status >= 500) {
    PAGODA_LOG(Warning) << "admin API: " << e.message;
  }
  return Reply(e);
}

Response MethodNotAllowed(const Request& req, const std::string& allow) {
  Response r = Reply(api::MethodNotAllowed(req.method, req.path));
  r.headers.Set("Allow", allow);
  return r;
}

#define ADMIN_RETURN_IF_ERROR(expr)          \
  do {                                       \
    if (auto admin_err_ = (expr)) return Reply(*admin_err_); \
  } while (0)

// The body as a JSON object; an empty body reads as {} when `empty_ok`.
api::ApiResult<json> Body(const Request& req, bool empty_ok = false) {
  if (empty_ok && req.body.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  return api::ParseJsonObject(req.body);
}

// An id for a message: only ids of the expected shape come back, so a key
// secret pasted where an id belongs is never echoed.
std::string SafeId(std::string_view id) {
  if (!IsSlug(id) || id.substr(0, 4) == "pgd-") return "(invalid id)";
  return std::string(id);
}

MaybeError Require(bool present, std::string_view field) {
  if (present) return std::nullopt;
  return api::MissingParameter(field);
}

// 404 unless tenant `id` exists; `param` names the field it came from.
std::optional<Response> RequireTenant(AdminContext& ctx, const std::string& id, std::string_view param) {
  if (auto e = CheckSlug(param, id)) return Reply(*e);
  auto t = ctx.store.GetTenant(id);
  if (t.ok()) return std::nullopt;
  if (t.status().code() == StatusCode::kNotFound) {
    return Reply(NotFoundError("No tenant '" + id + "'.", "tenant_not_found", param));
  }
  return StoreError("GetTenant", t.status());
}

std::optional<Response> RequireKey(AdminContext& ctx, const std::string& id, std::string_view param) {
  if (auto e = CheckSlug(param, id)) return Reply(*e);
  auto k = ctx.store.GetKey(id);
  if (k.ok()) return std::nullopt;
  if (k.status().code() == StatusCode::kNotFound) {
    return Reply(NotFoundError("No API key '" + SafeId(id) + "'.", "key_not_found", param));
  }
  return StoreError("GetKey", k.status());
}

// ---- tenants ----

MaybeError ReadPlan(const json& body, tenancy::PlanKind* plan) {
  std::string name;
  bool present = false;
  if (auto e = ReadString(body, "plan", &name, &present)) return e;
  if (!present) return std::nullopt;
  auto p = tenancy::ParsePlanKind(name);
  if (!p.ok()) return api::InvalidValue("plan", "Invalid 'plan': expected serverless, provisioned or dedicated.");
  *plan = *p;
  return std::nullopt;
}

// A workload class by our name: "batch" | "interactive" | "realtime".
MaybeError ReadClass(const json& body, std::string_view field, WorkloadClass* out, bool* present = nullptr) {
  std::string name;
  bool has = false;
  if (auto e = ReadString(body, field, &name, &has, 64)) return e;
  if (present) *present = has;
  if (!has) return std::nullopt;
  auto c = tenancy::ParseStoredClass(name);
  if (!c.ok()) {
    return api::InvalidValue(field, "Invalid '" + std::string(field) + "': expected batch, interactive or realtime.");
  }
  *out = *c;
  return std::nullopt;
}

// A max class: a name, or JSON null to clear it (back to the plan's for a
// tenant, the tenant's for a key). Absent leaves `out` unchanged.
MaybeError ReadMaxClass(const json& body, std::optional<WorkloadClass>* out) {
  if (const auto it = body.find("max_class"); it != body.end() && it->is_null()) {
    out->reset();
    return std::nullopt;
  }
  WorkloadClass c{};
  bool present = false;
  if (auto e = ReadClass(body, "max_class", &c, &present)) return e;
  if (present) *out = c;
  return std::nullopt;
}

// Fields shared by create and update; `t` holds the current values.
MaybeError ReadTenantFields(const json& body, tenancy::Tenant* t) {
  if (auto e = ReadString(body, "name", &t->name)) return e;
  if (auto e = ReadPlan(body, &t->plan)) return e;
  if (auto e = ReadNumber(body, "weight", 0, 1e6, /*min_exclusive=*/true, &t->weight)) return e;
  if (auto e = ReadBool(body, "share_cache_across_keys", &t->share_cache_across_keys)) return e;
  if (auto e = ReadString(body, "dedicated_deployment", &t->dedicated_deployment)) return e;
  if (auto e = ReadMaxClass(body, &t->max_class)) return e;
  if (auto e = ReadClass(body, "default_class", &t->default_class)) return e;
  if (t->plan == tenancy::PlanKind::kDedicated && t->dedicated_deployment.empty()) {
    return api::InvalidValue("dedicated_deployment",
                             "A dedicated tenant needs 'dedicated_deployment' (the deployment it is routed to).");
  }
  return std::nullopt;
}

Response CreateTenant(AdminContext& ctx, const Request& req) {
  auto body = Body(req);
  if (!body.ok()) return Reply(body.error());
  const json& b = body.value();
  ADMIN_RETURN_IF_ERROR(
      CheckFields(b, {"id", "name", "plan", "weight", "share_cache_across_keys", "dedicated_deployment", "max_class",
                      "default_class"}));
  tenancy::Tenant t;
  bool has_id = false, has_name = false;
  ADMIN_RETURN_IF_ERROR(ReadString(b, "id", &t.id, &has_id, 64));
  if (has_id) ADMIN_RETURN_IF_ERROR(CheckSlug("id", t.id));
  ADMIN_RETURN_IF_ERROR(ReadString(b, "name", &t.name, &has_name));
  ADMIN_RETURN_IF_ERROR(Require(has_name && !t.name.empty(), "name"));
  ADMIN_RETURN_IF_ERROR(ReadTenantFields(b, &t));
  if (has_id) {
    auto existing = ctx.store.GetTenant(t.id);
    if (existing.ok()) return Reply(ConflictError("Tenant '" + t.id + "' already exists.", "tenant_exists"));
    if (existing.status().code() != StatusCode::kNotFound) return StoreError("GetTenant", existing.status());
  }
  t.created_at = ctx.Now();
  auto created = ctx.store.CreateTenant(t);
  if (!created.ok()) return StoreError("CreateTenant", created.status());
  return Reply(201, TenantJson(*created));
}

Response ListTenants(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {});
  if (!q.ok()) return Reply(q.error());
  auto all = ctx.store.ListTenants();
  if (!all.ok()) return StoreError("ListTenants", all.status());
  json items = json::array();
  for (const auto& t : *all) items.push_back(TenantJson(t));
  return Reply(200, ListJson(std::move(items)));
}

// GET / PATCH /admin/tenants/{id}
Response OneTenant(AdminContext& ctx, const Request& req) {
  const auto id = PercentDecode(std::string_view(req.path).substr(std::string_view("/admin/tenants/").size()));
  if (!id || !IsSlug(*id)) {
    return Reply(NotFoundError("No tenant with this id (tenant ids are 1 to 64 characters of a-z, 0-9, '_' and '-').",
                               "tenant_not_found"));
  }
  if (req.method != "GET" && req.method != "PATCH") return MethodNotAllowed(req, "GET, PATCH");
  auto t = ctx.store.GetTenant(*id);
  if (!t.ok()) {
    if (t.status().code() == StatusCode::kNotFound) {
      return Reply(NotFoundError("No tenant '" + *id + "'.", "tenant_not_found"));
    }
    return StoreError("GetTenant", t.status());
  }
  if (req.method == "GET") return Reply(200, TenantJson(*t));
  auto body = Body(req);
  if (!body.ok()) return Reply(body.error());
  ADMIN_RETURN_IF_ERROR(CheckFields(
      body.value(), {"name", "plan", "weight", "share_cache_across_keys", "dedicated_deployment", "disabled",
                     "max_class", "default_class"}));
  tenancy::Tenant updated = *t;
  ADMIN_RETURN_IF_ERROR(ReadTenantFields(body.value(), &updated));
  ADMIN_RETURN_IF_ERROR(ReadBool(body.value(), "disabled", &updated.disabled));
  if (Status st = ctx.store.UpdateTenant(updated); !st.ok()) return StoreError("UpdateTenant", st);
  return Reply(200, TenantJson(updated));
}

// ---- keys ----

constexpr int64_t kMaxUnixSeconds = 253'402'300'799;  // 9999-12-31T23:59:59Z

Response CreateKey(AdminContext& ctx, const Request& req) {
  auto body = Body(req);
  if (!body.ok()) return Reply(body.error());
  const json& b = body.value();
  ADMIN_RETURN_IF_ERROR(CheckFields(b, {"tenant", "name", "models", "expires_at", "ttl_seconds", "max_class"}));
  tenancy::KeyRequest k;
  bool has_tenant = false, has_expiry = false, has_ttl = false;
  int64_t expires_s = 0, ttl_s = 0;
  ADMIN_RETURN_IF_ERROR(ReadString(b, "tenant", &k.tenant_id, &has_tenant, 64));
  ADMIN_RETURN_IF_ERROR(Require(has_tenant, "tenant"));
  ADMIN_RETURN_IF_ERROR(ReadString(b, "name", &k.name));
  ADMIN_RETURN_IF_ERROR(ReadStringList(b, "models", &k.models));
  ADMIN_RETURN_IF_ERROR(ReadInt(b, "expires_at", 1, kMaxUnixSeconds, &expires_s, &has_expiry));
  ADMIN_RETURN_IF_ERROR(ReadInt(b, "ttl_seconds", 1, 100LL * 365 * 86400, &ttl_s, &has_ttl));
  ADMIN_RETURN_IF_ERROR(ReadMaxClass(b, &k.max_class));
  const int64_t now = ctx.Now();
  if (has_expiry && has_ttl) {
    return Reply(api::InvalidValue("ttl_seconds", "Give 'expires_at' or 'ttl_seconds', not both."));
  }
  if (has_expiry) {
    if (expires_s * 1000 <= now) return Reply(api::InvalidValue("expires_at", "'expires_at' is in the past."));
    k.expires_at = expires_s * 1000;
  }
  if (has_ttl) k.expires_at = now + ttl_s * 1000;
  if (auto r = RequireTenant(ctx, k.tenant_id, "tenant")) return *r;
  auto issued = tenancy::IssueKey(ctx.store, k, now, ctx.options.pepper);
  if (!issued.ok()) return StoreError("IssueKey", issued.status());
  json j = KeyJson(issued->key, now);
  j["key"] = issued->secret;  // the one time the secret is shown
  return Reply(201, j);
}

Response ListKeys(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {"tenant"});
  if (!q.ok()) return Reply(q.error());
  std::vector<std::string> tenants;
  if (auto it = q->find("tenant"); it != q->end()) {
    if (auto r = RequireTenant(ctx, it->second, "tenant")) return *r;
    tenants.push_back(it->second);
  } else {
    auto all = ctx.store.ListTenants();
    if (!all.ok()) return StoreError("ListTenants", all.status());
    for (const auto& t : *all) tenants.push_back(t.id);
  }
  const int64_t now = ctx.Now();
  json items = json::array();
  for (const std::string& t : tenants) {
    auto keys = ctx.store.ListKeys(t);
    if (!keys.ok()) return StoreError("ListKeys", keys.status());
    for (const auto& k : *keys) items.push_back(KeyJson(k, now));
  }
  return Reply(200, ListJson(std::move(items)));
}

Response RotateKey(AdminContext& ctx, const Request& req, const tenancy::ApiKey& old) {
  auto body = Body(req, /*empty_ok=*/true);
  if (!body.ok()) return Reply(body.error());
  ADMIN_RETURN_IF_ERROR(CheckFields(body.value(), {"grace_seconds"}));
  int64_t grace_s = 0;
  ADMIN_RETURN_IF_ERROR(ReadInt(body.value(), "grace_seconds", 0, 30LL * 86400, &grace_s));
  const int64_t now = ctx.Now();
  if (old.revoked()) {
    return Reply(ConflictError("API key '" + old.id + "' is revoked; issue a new key instead.", "key_revoked"));
  }
  if (old.expired(now)) {
    return Reply(ConflictError("API key '" + old.id + "' has expired; issue a new key instead.", "key_expired"));
  }
  auto issued = tenancy::RotateKey(ctx.store, old.id, grace_s * 1000, now, ctx.options.pepper);
  if (!issued.ok()) return StoreError("RotateKey", issued.status());
  json j = KeyJson(issued->key, now);
  j["key"] = issued->secret;  // the one time the secret is shown
  j["replaces"] = old.id;
  if (auto after = ctx.store.GetKey(old.id); after.ok()) j["previous"] = KeyJson(*after, now);
  return Reply(201, j);
}

// GET /admin/keys/{id}, POST /admin/keys/{id}/revoke, POST /admin/keys/{id}/rotate
Response OneKey(AdminContext& ctx, const Request& req) {
  std::string_view rest = std::string_view(req.path).substr(std::string_view("/admin/keys/").size());
  std::string_view action;
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
    action = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  const auto id = PercentDecode(rest);
  if (!id || !IsSlug(*id)) {
    return Reply(NotFoundError("No API key with this id (key ids look like key_0123456789abcdef).", "key_not_found"));
  }
  if (action != "" && action != "revoke" && action != "rotate") {
    return Reply(api::NotFoundRoute(req.method, "/admin/keys/{id}/..."));
  }
  const std::string want = action.empty() ? "GET" : "POST";
  if (req.method != want) return MethodNotAllowed(req, want);
  auto key = ctx.store.GetKey(*id);
  if (!key.ok()) {
    if (key.status().code() == StatusCode::kNotFound) {
      return Reply(NotFoundError("No API key '" + SafeId(*id) + "'.", "key_not_found"));
    }
    return StoreError("GetKey", key.status());
  }
  const int64_t now = ctx.Now();
  if (action.empty()) return Reply(200, KeyJson(*key, now));
  if (action == "rotate") return RotateKey(ctx, req, *key);
  auto body = Body(req, /*empty_ok=*/true);
  if (!body.ok()) return Reply(body.error());
  ADMIN_RETURN_IF_ERROR(CheckFields(body.value(), {}));
  if (Status st = ctx.store.RevokeKey(*id, now); !st.ok()) return StoreError("RevokeKey", st);
  auto after = ctx.store.GetKey(*id);
  if (!after.ok()) return StoreError("GetKey", after.status());
  return Reply(200, KeyJson(*after, now));
}

// ---- limits ----

MaybeError ReadScope(std::string_view field, const std::string& name, tenancy::LimitScope* scope) {
  auto s = tenancy::ParseLimitScope(name);
  if (!s.ok()) return api::InvalidValue(field, "Invalid '" + std::string(field) + "': expected tenant or key.");
  *scope = *s;
  return std::nullopt;
}

std::optional<Response> RequireScope(AdminContext& ctx, tenancy::LimitScope scope, const std::string& id) {
  return scope == tenancy::LimitScope::kTenant ? RequireTenant(ctx, id, "id") : RequireKey(ctx, id, "id");
}

Response PutLimits(AdminContext& ctx, const Request& req) {
  auto body = Body(req);
  if (!body.ok()) return Reply(body.error());
  const json& b = body.value();
  ADMIN_RETURN_IF_ERROR(CheckFields(b, {"scope", "id", "model", "rpm", "tpm", "concurrent"}));
  std::string scope_name;
  bool has_scope = false, has_id = false, has_rpm = false, has_tpm = false, has_conc = false;
  tenancy::LimitRule rule;
  ADMIN_RETURN_IF_ERROR(ReadString(b, "scope", &scope_name, &has_scope));
  ADMIN_RETURN_IF_ERROR(Require(has_scope, "scope"));
  ADMIN_RETURN_IF_ERROR(ReadScope("scope", scope_name, &rule.scope));
  ADMIN_RETURN_IF_ERROR(ReadString(b, "id", &rule.scope_id, &has_id, 64));
  ADMIN_RETURN_IF_ERROR(Require(has_id, "id"));
  ADMIN_RETURN_IF_ERROR(ReadString(b, "model", &rule.model));
  int64_t rpm = 0, tpm = 0, conc = 0;
  constexpr int64_t kMaxLimit = 1'000'000'000'000;
  ADMIN_RETURN_IF_ERROR(ReadInt(b, "rpm", 0, kMaxLimit, &rpm, &has_rpm));
  ADMIN_RETURN_IF_ERROR(ReadInt(b, "tpm", 0, kMaxLimit, &tpm, &has_tpm));
  ADMIN_RETURN_IF_ERROR(ReadInt(b, "concurrent", 0, kMaxLimit, &conc, &has_conc));
  if (!has_rpm && !has_tpm && !has_conc) {
    return Reply(api::MissingParameter("rpm"));  // one of rpm, tpm, concurrent
  }
  if (auto r = RequireScope(ctx, rule.scope, rule.scope_id)) return *r;
  // Fields left out keep their current value (0 = unlimited for a new rule).
  auto current = ctx.store.GetLimits(rule.scope, rule.scope_id, rule.model);
  if (current.ok()) {
    rule.limits = current->limits;
  } else if (current.status().code() != StatusCode::kNotFound) {
    return StoreError("GetLimits", current.status());
  }
  if (has_rpm) rule.limits.rpm = rpm;
  if (has_tpm) rule.limits.tpm = tpm;
  if (has_conc) rule.limits.concurrent = conc;
  if (Status st = ctx.store.SetLimits(rule); !st.ok()) return StoreError("SetLimits", st);
  return Reply(200, LimitJson(rule));
}

Response ListLimits(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {"tenant"});
  if (!q.ok()) return Reply(q.error());
  std::string tenant;
  if (auto it = q->find("tenant"); it != q->end()) {
    if (auto r = RequireTenant(ctx, it->second, "tenant")) return *r;
    tenant = it->second;
  }
  auto rules = ctx.store.ListLimits(tenant);
  if (!rules.ok()) return StoreError("ListLimits", rules.status());
  json items = json::array();
  for (const auto& r : *rules) items.push_back(LimitJson(r));
  return Reply(200, ListJson(std::move(items)));
}

Response DeleteLimits(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {"scope", "id", "model"});
  if (!q.ok()) return Reply(q.error());
  if (!q->count("scope")) return Reply(api::MissingParameter("scope"));
  if (!q->count("id")) return Reply(api::MissingParameter("id"));
  tenancy::LimitScope scope;
  ADMIN_RETURN_IF_ERROR(ReadScope("scope", q->at("scope"), &scope));
  const std::string& id = q->at("id");
  ADMIN_RETURN_IF_ERROR(CheckSlug("id", id));
  const std::string model = q->count("model") ? q->at("model") : "";
  if (model.size() > 256) return Reply(api::InvalidValue("model", "Invalid 'model': longer than 256 bytes."));
  auto current = ctx.store.GetLimits(scope, id, model);
  if (!current.ok()) {
    if (current.status().code() == StatusCode::kNotFound) {
      return Reply(NotFoundError("No limits are set for " + std::string(tenancy::LimitScopeName(scope)) + " '" +
                                     SafeId(id) + "'" + (model.empty() ? "" : " on that model") + ".",
                                 "limit_not_found"));
    }
    return StoreError("GetLimits", current.status());
  }
  if (Status st = ctx.store.DeleteLimits(scope, id, model); !st.ok()) return StoreError("DeleteLimits", st);
  json j = LimitJson(*current);
  j["deleted"] = true;
  return Reply(200, j);
}

// ---- reservations ----

Response PutReservation(AdminContext& ctx, const Request& req) {
  auto body = Body(req);
  if (!body.ok()) return Reply(body.error());
  const json& b = body.value();
  ADMIN_RETURN_IF_ERROR(CheckFields(b, {"tenant", "model", "tokens_per_second"}));
  tenancy::Reservation r;
  bool has_tenant = false, has_model = false, has_tps = false;
  ADMIN_RETURN_IF_ERROR(ReadString(b, "tenant", &r.tenant_id, &has_tenant, 64));
  ADMIN_RETURN_IF_ERROR(Require(has_tenant, "tenant"));
  ADMIN_RETURN_IF_ERROR(ReadString(b, "model", &r.model, &has_model));
  ADMIN_RETURN_IF_ERROR(Require(has_model && !r.model.empty(), "model"));
  ADMIN_RETURN_IF_ERROR(ReadNumber(b, "tokens_per_second", 0, 1e9, /*min_exclusive=*/true, &r.tokens_per_second,
                                   &has_tps));
  ADMIN_RETURN_IF_ERROR(Require(has_tps, "tokens_per_second"));
  if (auto e = RequireTenant(ctx, r.tenant_id, "tenant")) return *e;
  if (Status st = ctx.store.SetReservation(r); !st.ok()) return StoreError("SetReservation", st);
  return Reply(200, ReservationJson(r));
}

Response ListReservations(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {"tenant"});
  if (!q.ok()) return Reply(q.error());
  const auto tenant = q->find("tenant");
  if (tenant != q->end()) {
    if (auto r = RequireTenant(ctx, tenant->second, "tenant")) return *r;
  }
  auto all = ctx.store.ListReservations();
  if (!all.ok()) return StoreError("ListReservations", all.status());
  json items = json::array();
  for (const auto& r : *all) {
    if (tenant == q->end() || r.tenant_id == tenant->second) items.push_back(ReservationJson(r));
  }
  return Reply(200, ListJson(std::move(items)));
}

Response DeleteReservation(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {"tenant", "model"});
  if (!q.ok()) return Reply(q.error());
  if (!q->count("tenant")) return Reply(api::MissingParameter("tenant"));
  if (!q->count("model") || q->at("model").empty()) return Reply(api::MissingParameter("model"));
  const std::string& tenant = q->at("tenant");
  const std::string& model = q->at("model");
  ADMIN_RETURN_IF_ERROR(CheckSlug("tenant", tenant));
  auto all = ctx.store.ListReservations();
  if (!all.ok()) return StoreError("ListReservations", all.status());
  const auto it = std::find_if(all->begin(), all->end(),
                               [&](const tenancy::Reservation& r) { return r.tenant_id == tenant && r.model == model; });
  if (it == all->end()) {
    return Reply(NotFoundError("Tenant '" + tenant + "' has no reservation on that model.", "reservation_not_found"));
  }
  if (Status st = ctx.store.DeleteReservation(tenant, model); !st.ok()) return StoreError("DeleteReservation", st);
  json j = ReservationJson(*it);
  j["deleted"] = true;
  return Reply(200, j);
}

// ---- prices ----

Response PutPrice(AdminContext& ctx, const Request& req) {
  auto body = Body(req);
  if (!body.ok()) return Reply(body.error());
  const json& b = body.value();
  ADMIN_RETURN_IF_ERROR(
      CheckFields(b, {"model", "input_per_mtok", "cached_input_per_mtok", "output_per_mtok", "replica_hour",
                      "batch_factor"}));
  tenancy::Price p;
  bool has_model = false, has_in = false, has_cached = false, has_out = false;
  constexpr double kMaxPrice = 1e9;
  ADMIN_RETURN_IF_ERROR(ReadString(b, "model", &p.model, &has_model));
  ADMIN_RETURN_IF_ERROR(Require(has_model && !p.model.empty(), "model"));
  ADMIN_RETURN_IF_ERROR(ReadNumber(b, "input_per_mtok", 0, kMaxPrice, false, &p.input_per_mtok, &has_in));
  ADMIN_RETURN_IF_ERROR(Require(has_in, "input_per_mtok"));
  ADMIN_RETURN_IF_ERROR(
      ReadNumber(b, "cached_input_per_mtok", 0, kMaxPrice, false, &p.cached_input_per_mtok, &has_cached));
  ADMIN_RETURN_IF_ERROR(ReadNumber(b, "output_per_mtok", 0, kMaxPrice, false, &p.output_per_mtok, &has_out));
  ADMIN_RETURN_IF_ERROR(Require(has_out, "output_per_mtok"));
  ADMIN_RETURN_IF_ERROR(ReadNumber(b, "replica_hour", 0, kMaxPrice, false, &p.replica_hour));
  // (0, 1]; absent = 1 (no batch discount), like every field of a PUT.
  ADMIN_RETURN_IF_ERROR(ReadNumber(b, "batch_factor", 0, 1, /*min_exclusive=*/true, &p.batch_factor));
  if (!has_cached) p.cached_input_per_mtok = p.input_per_mtok;  // no cache discount unless priced
  if (Status st = ctx.store.SetPrice(p); !st.ok()) return StoreError("SetPrice", st);
  return Reply(200, PriceJson(p));
}

Response ListPrices(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {});
  if (!q.ok()) return Reply(q.error());
  auto all = ctx.store.ListPrices();
  if (!all.ok()) return StoreError("ListPrices", all.status());
  json items = json::array();
  for (const auto& p : *all) items.push_back(PriceJson(p));
  return Reply(200, ListJson(std::move(items)));
}

Response DeletePrice(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {"model"});
  if (!q.ok()) return Reply(q.error());
  if (!q->count("model") || q->at("model").empty()) return Reply(api::MissingParameter("model"));
  const std::string& model = q->at("model");
  auto all = ctx.store.ListPrices();
  if (!all.ok()) return StoreError("ListPrices", all.status());
  const auto it =
      std::find_if(all->begin(), all->end(), [&](const tenancy::Price& p) { return p.model == model; });
  if (it == all->end()) return Reply(NotFoundError("No price is set for that model.", "price_not_found", "model"));
  if (Status st = ctx.store.DeletePrice(model); !st.ok()) return StoreError("DeletePrice", st);
  json j = PriceJson(*it);
  j["deleted"] = true;
  return Reply(200, j);
}

// ---- usage ----

MaybeError ReadGroupBy(const std::string& list, tenancy::UsageQuery* q) {
  q->by_tenant = q->by_key = q->by_model = q->by_day = q->by_tier = false;
  if (list == "none") return std::nullopt;
  std::string_view rest = list;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item == "tenant") {
      q->by_tenant = true;
    } else if (item == "key") {
      q->by_key = true;
    } else if (item == "model") {
      q->by_model = true;
    } else if (item == "day") {
      q->by_day = true;
    } else if (item == "service_tier") {
      q->by_tier = true;
    } else {
      return api::InvalidValue(
          "group_by", "Invalid 'group_by': a comma-separated list of tenant, key, model, day and service_tier (or none).");
    }
  }
  return std::nullopt;
}

Response Usage(AdminContext& ctx, const Request& req) {
  auto q = ParseQuery(req.query, {"group_by", "from", "to", "tenant", "key", "model", "format"});
  if (!q.ok()) return Reply(q.error());
  tenancy::UsageQuery uq;
  if (auto it = q->find("group_by"); it != q->end()) ADMIN_RETURN_IF_ERROR(ReadGroupBy(it->second, &uq));
  if (auto it = q->find("from"); it != q->end()) {
    auto t = ParseTimeParam("from", it->second, /*end_of_range=*/false);
    if (!t.ok()) return Reply(t.error());
    uq.from_ms = t.value();
  }
  if (auto it = q->find("to"); it != q->end()) {
    auto t = ParseTimeParam("to", it->second, /*end_of_range=*/true);
    if (!t.ok()) return Reply(t.error());
    uq.to_ms = t.value();
  }
  if (uq.from_ms >= uq.to_ms) return Reply(api::InvalidValue("to", "'to' must be after 'from'."));
  if (auto it = q->find("tenant"); it != q->end()) {
    if (auto r = RequireTenant(ctx, it->second, "tenant")) return *r;
    uq.tenant_id = it->second;
  }
  if (auto it = q->find("key"); it != q->end()) {
    if (auto r = RequireKey(ctx, it->second, "key")) return *r;
    uq.key_id = it->second;
  }
  if (auto it = q->find("model"); it != q->end()) {
    if (it->second.empty() || it->second.size() > 256) {
      return Reply(api::InvalidValue("model", "Invalid 'model': 1 to 256 bytes."));
    }
    uq.model = it->second;
  }
  std::string format = "json";
  if (auto it = q->find("format"); it != q->end()) format = it->second;
  if (format != "json" && format != "csv") {
    return Reply(api::InvalidValue("format", "Invalid 'format': expected json or csv."));
  }
  auto report = tenancy::BuildUsageReport(ctx.store, uq);
  if (!report.ok()) return StoreError("BuildUsageReport", report.status());
  if (format == "csv") {
    Response r;
    r.status = 200;
    r.content_type = "text/csv; charset=utf-8";
    r.headers.Set("Content-Disposition", "attachment; filename=\"usage.csv\"");
    r.body = tenancy::UsageReportCsv(*report);
    return r;
  }
  json j = tenancy::UsageReportJson(*report);
  json group_by = json::array();
  if (uq.by_tenant) group_by.push_back("tenant");
  if (uq.by_key) group_by.push_back("key");
  if (uq.by_model) group_by.push_back("model");
  if (uq.by_day) group_by.push_back("day");
  if (uq.by_tier) group_by.push_back("service_tier");
  j["object"] = "usage_report";
  j["group_by"] = std::move(group_by);
  j["from"] = TimeJson(uq.from_ms);
  j["to"] = uq.to_ms == INT64_MAX ? json(nullptr) : TimeJson(uq.to_ms);
  return Reply(200, j);
}

Response Sla(AdminContext& ctx, const Request&) { return Reply(200, ctx.options.sla->ToJson()); }

// ---- wiring ----

// A router handler that runs `fn` on the admin thread.
http::Handler OnAdminThread(std::shared_ptr<AdminContext> ctx, AdminFn fn) {
  return [ctx = std::move(ctx), fn](const Request& req, std::shared_ptr<http::ResponseWriter> writer) {
    AdminContext* c = ctx.get();  // tasks never own the context: it owns the thread they run on
    const bool queued = c->worker.Post([c, fn, req, writer] {
      Response r;
      try {
        r = fn(*c, req);
      } catch (const std::exception& e) {
        PAGODA_LOG(Error) << "admin API: " << req.method << " " << req.path << ": unexpected exception: " << e.what();
        r = Reply(api::ServerError("The admin API failed on " + req.method + " " + req.path + "."));
      }
      writer->Respond(std::move(r));
    });
    if (!queued) {
      writer->Respond(Reply(api::Overloaded("The admin API is busy (" + std::to_string(c->options.max_queued) +
                                            " requests queued); retry shortly.")));
    }
  };
}

}  // namespace

void AddControlAdminRoutes(http::Router& router, TenantStore& store, AdminRouteOptions options) {
  auto ctx = std::make_shared<AdminContext>(store, std::move(options));
  auto add = [&](const char* method, const char* path, AdminFn fn) { router.Add(method, path, OnAdminThread(ctx, fn)); };
  add("POST", "/admin/tenants", CreateTenant);
  add("GET", "/admin/tenants", ListTenants);
  router.AddPrefix("/admin/tenants/", OnAdminThread(ctx, OneTenant));
  add("POST", "/admin/keys", CreateKey);
  add("GET", "/admin/keys", ListKeys);
  router.AddPrefix("/admin/keys/", OnAdminThread(ctx, OneKey));
  add("PUT", "/admin/limits", PutLimits);
  add("GET", "/admin/limits", ListLimits);
  add("DELETE", "/admin/limits", DeleteLimits);
  add("PUT", "/admin/reservations", PutReservation);
  add("GET", "/admin/reservations", ListReservations);
  add("DELETE", "/admin/reservations", DeleteReservation);
  add("PUT", "/admin/prices", PutPrice);
  add("GET", "/admin/prices", ListPrices);
  add("DELETE", "/admin/prices", DeletePrice);
  add("GET", "/admin/usage", Usage);
  if (ctx->options.sla != nullptr) add("GET", "/admin/sla", Sla);
}

}  // namespace pagoda::control
