// ControlPlane over a real store (a SQLite file and a fresh PostgreSQL
// database: the same cases on both): workload classes resolved from key,
// tenant and plan and clamped per request; the class in the signed headers;
// the internal principal (batch lines) checked like the key it names, never
// logged; callers that meter themselves (no ledger records, counters
// settled); and reservations set, changed and deleted through the admin API
// (or another process's store) reaching the SLA figures without a restart.
#include "control/control_plane.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <variant>

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "control/admin_routes.h"
#include "http/client.h"
#include "http/server.h"
#include "tenancy/key_admin.h"
#include "tenancy/store_backends.h"

namespace pagoda::control {
namespace {

using tenancy::testsupport::Backend;

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";

class ControlPlaneTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = Backend::Make(GetParam());
    if (!backend_->ok()) GTEST_SKIP() << backend_->why();
    Open();
  }

  void Open() {
    cp_.reset();
    ControlPlaneOptions o;
    o.store_url = backend_->url();
    o.signing_secret = kSecret;
    o.allow_insecure_keys = false;  // the internal token needs no TLS; keys do
    auto cp = ControlPlane::Open(o);
    ASSERT_TRUE(cp.ok()) << cp.status().ToString();
    cp_ = std::move(*cp);
  }

  tenancy::TenantStore& store() { return cp_->store(); }

  tenancy::Tenant MakeTenant(const std::string& id, tenancy::PlanKind plan,
                             std::optional<WorkloadClass> max_class = std::nullopt,
                             WorkloadClass default_class = WorkloadClass::kInteractive) {
    tenancy::Tenant t;
    t.id = id;
    t.name = id;
    t.plan = plan;
    if (plan == tenancy::PlanKind::kDedicated) t.dedicated_deployment = id + "-dep";
    t.max_class = max_class;
    t.default_class = default_class;
    auto r = store().CreateTenant(t);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : t;
  }

  tenancy::IssuedKey MakeKey(const std::string& tenant, std::optional<WorkloadClass> max_class = std::nullopt,
                             std::vector<std::string> models = {}) {
    tenancy::KeyRequest k;
    k.tenant_id = tenant;
    k.name = "k";
    k.models = std::move(models);
    k.max_class = max_class;
    auto issued = tenancy::IssueKey(store(), k, NowMs());
    EXPECT_TRUE(issued.ok()) << issued.status().ToString();
    return issued.ok() ? *issued : tenancy::IssuedKey{};
  }

  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // A request over TLS with the key's secret.
  static http::Request WithKey(const std::string& secret) {
    http::Request r;
    r.secure = true;
    r.headers.Add("Authorization", "Bearer " + secret);
    return r;
  }
  // An in-process request as the internal principal (plain HTTP: it never
  // crosses the network).
  http::Request Internal(const std::string& key_id) const {
    http::Request r;
    r.headers.Add("Authorization", "Bearer " + cp_->InternalToken());
    if (!key_id.empty()) r.headers.Add(kOnBehalfOfHeader, key_id);
    return r;
  }

  Caller MustAuthenticate(const http::Request& r, std::string_view model = "m") {
    auto who = cp_->Authenticate(r, model);
    if (auto* resp = std::get_if<http::Response>(&who)) {
      ADD_FAILURE() << "refused: " << resp->status << " " << resp->body;
      return Caller{};
    }
    return std::get<Caller>(std::move(who));
  }
  int StatusOf(const http::Request& r, std::string_view model = "m") {
    auto who = cp_->Authenticate(r, model);
    if (auto* resp = std::get_if<http::Response>(&who)) return resp->status;
    return 200;
  }

  std::vector<tenancy::UsageRecord> Ledger() {
    EXPECT_TRUE(cp_->ledger().Flush().ok());
    auto rows = store().ListUsage("", 0, INT64_MAX, 1000);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : std::vector<tenancy::UsageRecord>{};
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ControlPlane> cp_;
};

// ---- workload classes ----

TEST_P(ControlPlaneTest, ClassesComeFromTheKeyElseTheTenantElseThePlan) {
  using enum WorkloadClass;
  using tenancy::PlanKind;
  struct Case {
    const char* tenant;
    PlanKind plan;
    std::optional<WorkloadClass> tenant_max;
    WorkloadClass tenant_default;
    std::optional<WorkloadClass> key_max;
    WorkloadClass want_max;
    WorkloadClass want_default;
  };
  const Case cases[] = {
      // Plan defaults.
      {"serverless", PlanKind::kServerless, std::nullopt, kInteractive, std::nullopt, kInteractive, kInteractive},
      {"provisioned", PlanKind::kProvisioned, std::nullopt, kInteractive, std::nullopt, kRealtime, kInteractive},
      {"dedicated", PlanKind::kDedicated, std::nullopt, kInteractive, std::nullopt, kRealtime, kInteractive},
      // The tenant's max replaces the plan's, either way.
      {"lowered", PlanKind::kProvisioned, kBatch, kInteractive, std::nullopt, kBatch, kBatch},  // default clamped
      {"raised", PlanKind::kServerless, kRealtime, kRealtime, std::nullopt, kRealtime, kRealtime},
      // A default above the plan's max is clamped to it.
      {"eager", PlanKind::kServerless, std::nullopt, kRealtime, std::nullopt, kInteractive, kInteractive},
      {"patient", PlanKind::kDedicated, std::nullopt, kBatch, std::nullopt, kRealtime, kBatch},
      // The key's max replaces its tenant's, either way.
      {"key-up", PlanKind::kServerless, std::nullopt, kInteractive, kRealtime, kRealtime, kInteractive},
      {"key-down", PlanKind::kProvisioned, kRealtime, kRealtime, kBatch, kBatch, kBatch},
  };
  for (const Case& c : cases) {
    MakeTenant(c.tenant, c.plan, c.tenant_max, c.tenant_default);
    const Caller caller = MustAuthenticate(WithKey(MakeKey(c.tenant, c.key_max).secret));
    EXPECT_EQ(caller.max_class, c.want_max) << c.tenant;
    EXPECT_EQ(caller.default_class, c.want_default) << c.tenant;
    EXPECT_FALSE(caller.metered_by_caller);
    // No class asked for: the default.
    EXPECT_EQ(cp_->ResolveClass(caller, std::nullopt), c.want_default) << c.tenant;
    EXPECT_EQ(ResolveClass(caller, ParseWorkloadClass("auto")), c.want_default) << c.tenant;
  }
}

TEST_P(ControlPlaneTest, ARequestAboveItsMaxIsDowngradedNotRefused) {
  using enum WorkloadClass;
  MakeTenant("shared", tenancy::PlanKind::kServerless);
  const Caller caller = MustAuthenticate(WithKey(MakeKey("shared").secret));
  ASSERT_EQ(caller.max_class, kInteractive);
  EXPECT_EQ(cp_->ResolveClass(caller, kRealtime), kInteractive);
  EXPECT_EQ(cp_->ResolveClass(caller, ParseWorkloadClass("priority")), kInteractive);  // OpenAI's name
  EXPECT_EQ(cp_->ResolveClass(caller, ParseWorkloadClass("scale")), kInteractive);
  EXPECT_EQ(cp_->ResolveClass(caller, kInteractive), kInteractive);
  EXPECT_EQ(cp_->ResolveClass(caller, kBatch), kBatch);  // below the max: as asked
  EXPECT_EQ(cp_->ResolveClass(caller, ParseWorkloadClass("flex")), kBatch);

  MakeTenant("batch-only", tenancy::PlanKind::kDedicated, kBatch);
  const Caller low = MustAuthenticate(WithKey(MakeKey("batch-only").secret));
  for (WorkloadClass asked : {kBatch, kInteractive, kRealtime}) EXPECT_EQ(cp_->ResolveClass(low, asked), kBatch);
  EXPECT_EQ(cp_->ResolveClass(low, std::nullopt), kBatch);
}

TEST_P(ControlPlaneTest, StoredClassesAreValidatedAndSurviveAReopen) {
  using enum WorkloadClass;
  MakeTenant("t", tenancy::PlanKind::kServerless, kRealtime, kBatch);
  const auto key = MakeKey("t", kBatch);
  Open();  // a fresh cache over the same store
  auto t = store().GetTenant("t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->max_class, kRealtime);
  EXPECT_EQ(t->default_class, kBatch);
  auto k = store().GetKey(key.key.id);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->max_class, kBatch);
  // Cleared again: the plan's.
  t->max_class.reset();
  ASSERT_TRUE(store().UpdateTenant(*t).ok());
  EXPECT_FALSE(store().GetTenant("t")->max_class.has_value());
  // Values outside the enum never reach the store.
  tenancy::Tenant bad = *t;
  bad.default_class = static_cast<WorkloadClass>(9);
  EXPECT_EQ(store().UpdateTenant(bad).code(), StatusCode::kInvalidArgument);
  bad = *t;
  bad.max_class = static_cast<WorkloadClass>(3);
  EXPECT_EQ(store().UpdateTenant(bad).code(), StatusCode::kInvalidArgument);
  tenancy::KeyRequest kr{"t", "bad", {}, 0, static_cast<WorkloadClass>(5)};
  EXPECT_EQ(tenancy::IssueKey(store(), kr, NowMs()).status().code(), StatusCode::kInvalidArgument);
  // Rotation keeps the key's class.
  auto rotated = tenancy::RotateKey(store(), key.key.id, 0, NowMs());
  ASSERT_TRUE(rotated.ok()) << rotated.status().ToString();
  EXPECT_EQ(store().GetKey(rotated->key.id)->max_class, kBatch);
}

TEST_P(ControlPlaneTest, SignedHeadersCarryTheClampedClass) {
  using enum WorkloadClass;
  MakeTenant("shared", tenancy::PlanKind::kServerless);
  const Caller caller = MustAuthenticate(WithKey(MakeKey("shared").secret));
  auto verify = [&](const tenancy::HeaderList& h) {
    auto lookup = [&h](std::string_view name) -> const std::string* {
      for (const auto& [n, v] : h) {
        if (n == name) return &v;
      }
      return nullptr;
    };
    return tenancy::VerifyTenantHeaders(lookup, kSecret, std::chrono::system_clock::now(), nullptr);
  };
  auto realtime = verify(cp_->SignedHeaders(caller, "req-1", kRealtime));
  ASSERT_TRUE(realtime.ok()) << tenancy::VerifyOutcomeName(realtime.outcome);
  EXPECT_EQ(realtime.context.workload_class, kInteractive);  // above the key's max
  auto batch = verify(cp_->SignedHeaders(caller, "req-2", kBatch));
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch.context.workload_class, kBatch);
  auto plain = verify(cp_->SignedHeaders(caller, "req-3"));  // existing callers: interactive
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain.context.workload_class, kInteractive);
  EXPECT_EQ(caller.Context().workload_class, caller.default_class);
  EXPECT_EQ(caller.Context(kRealtime).workload_class, kInteractive);
}

// ---- the internal principal ----

TEST_P(ControlPlaneTest, InternalTokenIsSixtyFourHexDigitsPerProcess) {
  const std::string first = cp_->InternalToken();
  ASSERT_EQ(first.size(), 64u);
  for (char c : first) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << first;
  Open();
  EXPECT_NE(cp_->InternalToken(), first);
}

TEST_P(ControlPlaneTest, InternalTokenActsAsTheNamedKeyWithItsChecks) {
  MakeTenant("acme", tenancy::PlanKind::kProvisioned);
  const auto key = MakeKey("acme", WorkloadClass::kBatch, {"m"});
  const Caller caller = MustAuthenticate(Internal(key.key.id));
  EXPECT_EQ(caller.key.id, key.key.id);
  EXPECT_EQ(caller.tenant.id, "acme");
  EXPECT_TRUE(caller.metered_by_caller);
  EXPECT_EQ(caller.max_class, WorkloadClass::kBatch);
  EXPECT_EQ(caller.cache_scope, "t:acme/k:" + key.key.id);

  EXPECT_EQ(StatusOf(Internal(key.key.id), "other-model"), 403);  // the key's model scope
  EXPECT_EQ(StatusOf(Internal("")), 401);                         // no key named
  EXPECT_EQ(StatusOf(Internal("key_0000000000000000")), 401);     // unknown key
  EXPECT_EQ(StatusOf(Internal(std::string(300, 'k'))), 401);

  // A wrong token is just an unknown key: over TLS 401, over plain HTTP the
  // TLS rule refuses it first; the header never makes it the named key.
  http::Request wrong = Internal(key.key.id);
  wrong.headers.Set("Authorization", "Bearer " + std::string(64, 'a'));
  EXPECT_EQ(StatusOf(wrong), 403);
  wrong.secure = true;
  EXPECT_EQ(StatusOf(wrong), 401);
  // A real key that names another key in the header stays itself.
  MakeTenant("other", tenancy::PlanKind::kServerless);
  http::Request own = WithKey(MakeKey("other").secret);
  own.headers.Add(kOnBehalfOfHeader, key.key.id);
  const Caller itself = MustAuthenticate(own);
  EXPECT_EQ(itself.tenant.id, "other");
  EXPECT_FALSE(itself.metered_by_caller);

  // Revoked, expired and disabled: refused like the key itself.
  ASSERT_TRUE(store().RevokeKey(key.key.id, NowMs()).ok());
  EXPECT_EQ(StatusOf(Internal(key.key.id)), 401);
  tenancy::KeyRequest expiring{"acme", "soon", {}, NowMs() + 1};
  auto expired = tenancy::IssueKey(store(), expiring, NowMs());
  ASSERT_TRUE(expired.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(StatusOf(Internal(expired->key.id)), 401);
  const auto live = MakeKey("acme");
  EXPECT_EQ(StatusOf(Internal(live.key.id)), 200);
  auto t = store().GetTenant("acme");
  t->disabled = true;
  ASSERT_TRUE(store().UpdateTenant(*t).ok());
  EXPECT_EQ(StatusOf(Internal(live.key.id)), 401);
}

TEST_P(ControlPlaneTest, InternalTokenNeverReachesTheLogOrMetrics) {
  const LogLevel before = GetLogLevel();
  SetLogLevel(LogLevel::kDebug);
  ::testing::internal::CaptureStderr();
  Open();
  MakeTenant("acme", tenancy::PlanKind::kServerless);
  const auto key = MakeKey("acme");
  const Caller caller = MustAuthenticate(Internal(key.key.id));
  (void)StatusOf(Internal("key_0000000000000000"));
  auto ticket = cp_->Admit(caller, "m", 10, 10, "req-log");
  ASSERT_TRUE(std::holds_alternative<Ticket>(ticket));
  RequestOutcome o;
  o.request_id = "req-log";
  o.model = "m";
  cp_->Finish(std::get<Ticket>(ticket), caller, o);
  const std::string metrics = cp_->RenderMetrics();
  const std::string token = cp_->InternalToken();
  cp_.reset();  // the ledger's last writes and any shutdown logging
  const std::string log = ::testing::internal::GetCapturedStderr();
  SetLogLevel(before);
  EXPECT_FALSE(log.empty());  // debug logging did run (the store's open line at least)
  EXPECT_EQ(log.find(token), std::string::npos);
  EXPECT_EQ(metrics.find(token), std::string::npos);
  Open();
  EXPECT_TRUE(backend_->Files().size() > 0);
  const auto leaks = tenancy::testsupport::FindInFiles(backend_->Files(), token.substr(0, 8), {token});
  EXPECT_TRUE(leaks.empty()) << leaks.front();
}

// ---- metered by the caller ----

TEST_P(ControlPlaneTest, MeteredByCallerWritesNoLedgerRecordsButSettlesCounters) {
  MakeTenant("acme", tenancy::PlanKind::kServerless);
  const auto key = MakeKey("acme", WorkloadClass::kBatch);
  ASSERT_TRUE(store().SetLimits({tenancy::LimitScope::kKey, key.key.id, "", {0, 0, 1}}).ok());  // one at a time
  const Caller internal = MustAuthenticate(Internal(key.key.id));
  ASSERT_TRUE(internal.metered_by_caller);

  auto first = cp_->Admit(internal, "m", 100, 100, "line-1");
  ASSERT_TRUE(std::holds_alternative<Ticket>(first));
  // The slot is taken: refused, and the refusal is not recorded either.
  auto refused = cp_->Admit(internal, "m", 100, 100, "line-2");
  ASSERT_TRUE(std::holds_alternative<http::Response>(refused));
  EXPECT_EQ(std::get<http::Response>(refused).status, 429);
  RequestOutcome o;
  o.request_id = "line-1";
  o.model = "m";
  o.prompt_tokens = 100;
  o.completion_tokens = 40;
  o.ttft_seconds = 0.05;
  o.total_seconds = 0.5;
  o.service_tier = WorkloadClass::kBatch;
  cp_->Finish(std::get<Ticket>(first), internal, o);
  // Settled: the slot is free again, and the SLA figures saw the tokens.
  auto again = cp_->Admit(internal, "m", 100, 100, "line-3");
  ASSERT_TRUE(std::holds_alternative<Ticket>(again));
  EXPECT_GT(cp_->sla().TokensPerSecond("acme", "m"), 0);
  o.request_id = "line-3";
  cp_->Finish(std::get<Ticket>(again), internal, o);
  EXPECT_TRUE(Ledger().empty());

  // The same key with its secret is metered here: one record, its tier kept.
  const Caller direct = MustAuthenticate(WithKey(key.secret));
  EXPECT_FALSE(direct.metered_by_caller);
  auto ticket = cp_->Admit(direct, "m", 100, 100, "req-direct");
  ASSERT_TRUE(std::holds_alternative<Ticket>(ticket));
  auto blocked = cp_->Admit(direct, "m", 100, 100, "req-blocked");
  ASSERT_TRUE(std::holds_alternative<http::Response>(blocked));
  o.request_id = "req-direct";
  cp_->Finish(std::get<Ticket>(ticket), direct, o);
  const auto records = Ledger();
  ASSERT_EQ(records.size(), 2u);
  for (const auto& r : records) {
    EXPECT_TRUE(r.request_id == "req-direct" || r.request_id == "req-blocked") << r.request_id;
    if (r.request_id == "req-direct") {
      EXPECT_EQ(r.service_tier, WorkloadClass::kBatch);
      EXPECT_EQ(r.completion_tokens, 40);
    } else {
      EXPECT_EQ(r.status, tenancy::UsageStatus::kRateLimited);
    }
  }
}

// The reserved figure of `tenant` in the SLA JSON (/admin/sla); -1 when the
// tenant is not listed.
double ReservedIn(const nlohmann::json& sla, const std::string& tenant) {
  for (const auto& f : sla["data"]) {
    if (f["tenant"] == tenant) return f["reserved_tokens_per_second"].get<double>();
  }
  return -1;
}

TEST_P(ControlPlaneTest, ReservationsReachTheSlaFiguresWithoutARestart) {
  MakeTenant("prov", tenancy::PlanKind::kProvisioned);
  const auto key = MakeKey("prov");
  // The admin API as `pagoda serve --db` wires it: the control plane's
  // store and SLA figures.
  http::Router router;
  AdminRouteOptions ao;
  ao.sla = &cp_->sla();
  AddControlAdminRoutes(router, store(), std::move(ao));
  http::Server server(http::ServerOptions{}, std::move(router));
  ASSERT_TRUE(server.Start().ok());
  http::Client client("127.0.0.1", server.port());
  auto call = [&](const std::string& method, const std::string& target, const std::string& body = "") {
    http::Headers h;
    if (!body.empty()) h.Add("Content-Type", "application/json");
    auto r = client.Send(method, target, body, h);
    EXPECT_TRUE(r.ok()) << method << " " << target;
    return r.ok() ? std::make_pair(r->status, nlohmann::json::parse(r->body, nullptr, false))
                  : std::make_pair(0, nlohmann::json());
  };
  auto put = [&](const std::string& model, double tps) {
    const nlohmann::json b = {{"tenant", "prov"}, {"model", model}, {"tokens_per_second", tps}};
    EXPECT_EQ(call("PUT", "/admin/reservations", b.dump()).first, 200);
  };
  auto metric = [&] {
    const std::string text = cp_->RenderMetrics();
    const std::string name = "pagoda_tenant_reserved_tokens_per_second{tenant=\"prov\"} ";
    const size_t at = text.find(name);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size()));
  };
  EXPECT_EQ(ReservedIn(call("GET", "/admin/sla").second, "prov"), -1);
  EXPECT_EQ(metric(), -1);

  // Set: seen by /admin/sla and /metrics at once, and by admission (a
  // provisioned tenant below its reservation runs at priority 1).
  put("m", 500);
  EXPECT_EQ(ReservedIn(call("GET", "/admin/sla").second, "prov"), 500);
  EXPECT_EQ(metric(), 500);
  EXPECT_EQ(MustAuthenticate(WithKey(key.secret), "m").priority, 1);
  // Changed, and a second model.
  put("m", 800);
  put("other", 200);
  EXPECT_EQ(ReservedIn(call("GET", "/admin/sla").second, "prov"), 1000);
  EXPECT_EQ(metric(), 1000);
  // Through another process's store (a second gateway's admin API).
  auto other = backend_->Open();
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  ASSERT_TRUE((*other)->SetReservation({"prov", "other", 50}).ok());
  EXPECT_EQ(ReservedIn(cp_->sla().ToJson(), "prov"), 850);
  EXPECT_EQ(metric(), 850);
  // Deleted: one, then the other (the tenant leaves the figures: no samples).
  EXPECT_EQ(call("DELETE", "/admin/reservations?tenant=prov&model=m").first, 200);
  EXPECT_EQ(ReservedIn(call("GET", "/admin/sla").second, "prov"), 50);
  EXPECT_EQ(MustAuthenticate(WithKey(key.secret), "m").priority, 0);
  ASSERT_TRUE((*other)->DeleteReservation("prov", "other").ok());
  EXPECT_EQ(ReservedIn(call("GET", "/admin/sla").second, "prov"), -1);
  EXPECT_EQ(metric(), -1);
  // A tenant with samples stays listed, at 0 reserved.
  RequestTiming t;
  t.tenant = "prov";
  t.model = "m";
  t.completion_tokens = 10;
  cp_->sla().Record(t);
  EXPECT_EQ(ReservedIn(cp_->sla().ToJson(), "prov"), 0);
  server.Shutdown(std::chrono::seconds(1));
}

INSTANTIATE_TEST_SUITE_P(Backends, ControlPlaneTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace pagoda::control
