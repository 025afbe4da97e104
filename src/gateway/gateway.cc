#include "gateway/gateway.h"

#include <csignal>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/model_list.h"
#include "batch/batch_setup.h"
#include "base/log.h"
#include "console/console_routes.h"
#include "gateway/console_stats.h"
#include "gateway/health_probe.h"
#include "gateway/proxy.h"
#include "gateway/request_info.h"
#include "gateway/rollout_admin.h"
#include "gateway/router.h"
#include "gateway/schedule_admin.h"
#include "control/admin_routes.h"
#include "gateway/tenant_routing.h"

namespace pagoda::gateway {
namespace {

constexpr std::chrono::milliseconds kRolloutTick{100};
constexpr std::chrono::milliseconds kScheduleTick{1000};

volatile std::sig_atomic_t g_sighup = 0;
extern "C" void OnSighup(int) { g_sighup = 1; }

Status ApplyListenOverride(const std::string& listen, GatewayConfig* c) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return InvalidArgument("--listen '" + listen + "': expected HOST:PORT");
  int port = -1;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535) return InvalidArgument("--listen '" + listen + "': bad port");
  c->listen_address = listen.substr(0, colon);
  c->listen_port = static_cast<uint16_t>(port);
  return Status::Ok();
}

std::string ReadAdminKey(const GatewayConfig& c, const EnvLookup& env) {
  if (c.admin_key_env.empty()) return "";
  auto v = env(c.admin_key_env);
  return v ? *v : "";
}

// [control] as ControlPlaneOptions: the secrets from the environment.
Result<control::ControlPlaneOptions> ControlOptions(const GatewayConfig& c, const EnvLookup& env) {
  control::ControlPlaneOptions o;
  o.store_url = c.control.db;
  o.counters_url = c.control.counters;
  o.allow_insecure_keys = c.allow_insecure_keys;
  o.default_max_tokens = c.control.default_max_tokens;
  for (const auto& [var, out] : {std::pair<const std::string*, std::string*>{&c.control.signing_secret_env,
                                                                             &o.signing_secret},
                                 {&c.control.key_pepper_env, &o.key_pepper}}) {
    if (var->empty()) continue;
    auto v = env(*var);
    if (!v || v->empty()) return InvalidArgument("[control]: the environment variable " + *var + " is unset");
    *out = *v;
  }
  return o;
}

}  // namespace

Result<std::unique_ptr<Gateway>> Gateway::Create(GatewayOptions options) {
  auto config = LoadGatewayConfig(options.config_path);
  if (!config.ok()) return config.status();
  if (!options.listen_override.empty()) PAGODA_RETURN_IF_ERROR(ApplyListenOverride(options.listen_override, &*config));
  if (options.tls_cert_override.empty() != options.tls_key_override.empty()) {
    return InvalidArgument("--tls-cert and --tls-key go together");
  }
  auto table = RoutingTable::Build(*config, nullptr, options.env);
  if (!table.ok()) return table.status();
  std::unique_ptr<Gateway> g(new Gateway(std::move(options)));
  g->admin_key_ = ReadAdminKey(*config, g->options_.env);
  if (!config->admin_key_env.empty() && g->admin_key_.empty()) {
    PAGODA_LOG(Warning) << "gateway: " << config->admin_key_env << " is unset; the admin API is disabled";
  }
  g->table_ = std::move(table).value();
  g->schedules_ = std::make_unique<CapacityScheduler>(g->options_.wall_clock);
  g->schedules_->Adopt(g->table_);
  if (config->control.enabled()) {
    auto co = ControlOptions(*config, g->options_.env);
    if (!co.ok()) return co.status();
    auto cp = control::ControlPlane::Open(*co);
    if (!cp.ok()) return cp.status().WithContext("gateway [control]");
    g->control_ = std::move(cp).value();
    g->replica_hours_ =
        std::make_unique<ReplicaHoursMeter>(g->control_.get(), [gw = g.get()] { return gw->table(); });
    if (!config->allow_insecure_keys && config->tls_cert.empty() && g->options_.tls_cert_override.empty()) {
      PAGODA_LOG(Warning) << "gateway: API keys are accepted only over TLS and this listener is plain HTTP: every "
                             "keyed request will be refused (set tls_cert/tls_key, or allow_insecure_keys)";
    }
  }
  http::UpstreamClientOptions uo;
  uo.io_threads = config->upstream_threads;
  g->client_ = std::make_unique<http::UpstreamClient>(uo);
  g->health_ = std::make_unique<HealthChecker>(g->client_.get(), [gw = g.get()] { return gw->table(); });
  g->feed_ = std::make_unique<KvEventFeed>();
  g->metrics_.set_kv_event_feed(g->feed_.get());
  g->rollouts_ = std::make_unique<RolloutController>(
      g->table_,
      [gw = g.get()](std::shared_ptr<const Replica> replica, std::function<void(bool)> done) {
        const auto timeout = std::chrono::milliseconds(gw->table()->config().health_timeout_ms);
        ProbeHealth(*gw->client_, *replica, timeout,
                    [done = std::move(done)](bool ok, const std::string&) { done(ok); });
      },
      [gw = g.get()](const std::string& deployment) { return gw->metrics_.CountsFor(deployment); });
  http::ServerOptions so;
  so.address = config->listen_address;
  so.port = config->listen_port;
  so.io_threads = config->io_threads;
  so.tls = g->ListenerTls(*config);
  // Streams may sit quiet while a replica prefills; the per-request deadline bounds them.
  so.write_timeout = std::chrono::milliseconds(std::max<int64_t>(60'000, config->idle_timeout_ms));
  http::Router router = g->BuildRouter();
  PAGODA_RETURN_IF_ERROR(g->AddBatch(router));
  if (g->batch_) {
    so.max_body_bytes =
        std::max<size_t>(so.max_body_bytes, static_cast<size_t>(g->options_.batch.max_file_bytes) + (1u << 20));
  }
  g->server_ = std::make_unique<http::Server>(so, std::move(router));
  return g;
}

Gateway::~Gateway() {
  if (batch_) batch_->Stop(std::chrono::milliseconds(0));
  batch_.reset();
  if (server_) server_->Shutdown(std::chrono::milliseconds(0));
  if (health_) health_->Stop();
  if (feed_) feed_->Stop();
  if (rollouts_) rollouts_->StopTicking();
  if (replica_hours_) replica_hours_->Stop();
  if (schedules_) schedules_->StopTicking();
  server_.reset();
  health_.reset();
  client_.reset();
}

http::Router Gateway::BuildRouter() {
  http::Router router;
  auto proxy = [this](const http::Request& req, std::shared_ptr<http::ResponseWriter> w) {
    ProxyRequest(ProxyContext{client_.get(), &metrics_, control_.get()}, table(), req, std::move(w));
  };
  router.Add("POST", "/v1/chat/completions", http::Handler(proxy));
  router.Add("POST", "/v1/completions", http::Handler(proxy));
  router.AddPrefix("/v1/", http::Handler(proxy));
  router.Add("GET", "/v1/models", http::SyncHandler([this](const http::Request& req) {
               const auto t = table();
               std::optional<control::Caller> caller;
               if (control_) {
                 auto who = control_->Authenticate(req, "");
                 if (auto* refused = std::get_if<http::Response>(&who)) return std::move(*refused);
                 caller = std::move(std::get<control::Caller>(who));
               }
               api::ModelList list;
               for (const std::string& name : ServedModelNames(*t)) {
                 if (caller && !VisibleTo(*t, name, *caller)) continue;
                 api::ModelCard card;
                 card.id = name;
                 card.owned_by = "pagoda-gateway";
                 list.data.push_back(std::move(card));
               }
               return http::Response::Json(200, list.ToJson().dump());
             }));
  router.Add("GET", "/health", http::SyncHandler([](const http::Request&) {
               return http::Response::Json(200, R"({"status":"ok"})");
             }));
  router.Add("GET", "/metrics", http::SyncHandler([this](const http::Request&) {
               http::Response r = http::Response::Text(
                   200, metrics_.Render(*table()) + RenderServerMetrics(server_->stats()) +
                            rollouts_->RenderMetrics() + (control_ ? control_->RenderMetrics() : std::string()) +
                            (batch_ ? batch_->RenderMetrics() : std::string()));
               r.content_type = "text/plain; version=0.0.4";
               return r;
             }));
  AddAdminRoutes(router, this);
  if (control_) {
    control::AdminRouteOptions ao;
    ao.pepper = control_->options().key_pepper;
    ao.sla = &control_->sla();
    control::AddControlAdminRoutes(router, control_->store(), std::move(ao));
  }
  AddRolloutRoutes(router, rollouts_.get());
  AddScheduleRoutes(router, schedules_.get());
  // The web console (docs/CONSOLE.md): its pages at / and the dashboard's figures.
  console::AddConsoleRoutes(router);
  AddConsoleStatsRoute(router, ConsoleStatsSources{[this] { return table(); }, &metrics_, rollouts_.get(),
                                                   client_.get(), control_.get()});
  return router;
}

Status Gateway::AddBatch(http::Router& router) {
  // Lines go through a copy of the routes: the same keys, limits and
  // routing (over every replica) as a request from the network.
  batch::BatchSetup bs;
  bs.data_dir = options_.batch_data_dir;
  bs.options = options_.batch;
  bs.control = control_.get();
  auto service = batch::OpenBatchService(std::move(bs), std::make_shared<const http::Router>(router));
  if (!service.ok()) return service.status();
  batch_ = std::move(service).value();
  batch::AddBatchRoutesFor(router, batch_.get(), control_.get(), "start pagoda gateway with --data-dir DIR");
  return Status::Ok();
}

Status Gateway::Start() {
  PAGODA_RETURN_IF_ERROR(server_->Start());
  if (batch_) batch_->Start();
  if (options_.health_checks) health_->Start();
  feed_->Sync(*table());
  rollouts_->StartTicking(kRolloutTick);
  schedules_->StartTicking(kScheduleTick);
  if (replica_hours_) replica_hours_->Start();
  const auto t = table();
  PAGODA_LOG(Info) << "gateway: listening on " << (server_->tls() ? "https://" : "http://")
                   << t->config().listen_address << ":" << server_->port() << " ("
                   << t->config().models.size() << " model(s), " << t->AllReplicas().size() << " backend(s))";
  return Status::Ok();
}

uint16_t Gateway::port() const { return server_->port(); }

http::TlsFiles Gateway::ListenerTls(const GatewayConfig& config) const {
  if (!options_.tls_cert_override.empty()) return {options_.tls_cert_override, options_.tls_key_override};
  return {config.tls_cert, config.tls_key};
}

void Gateway::Shutdown(std::chrono::milliseconds deadline) {
  if (batch_) batch_->Stop(deadline);
  server_->Shutdown(deadline);
  health_->Stop();
  feed_->Stop();
  rollouts_->StopTicking();
  schedules_->StopTicking();
  if (replica_hours_) replica_hours_->Stop();
}

void Gateway::RunUntilSignal(std::chrono::milliseconds deadline) {
  std::atomic<bool> done{false};
  g_sighup = 0;
  std::signal(SIGHUP, OnSighup);
  std::thread watcher([&] {
    while (!done) {
      if (g_sighup) {
        g_sighup = 0;
        PAGODA_LOG(Info) << "gateway: SIGHUP, reloading " << options_.config_path;
        (void)Reload();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  server_->RunUntilSignal(deadline);
  if (batch_) batch_->Stop(std::chrono::milliseconds(0));
  done = true;
  watcher.join();
  std::signal(SIGHUP, SIG_DFL);
  health_->Stop();
  rollouts_->StopTicking();
  schedules_->StopTicking();
  if (replica_hours_) replica_hours_->Stop();
}

std::shared_ptr<const RoutingTable> Gateway::table() const {
  std::lock_guard<std::mutex> lock(mu_);
  return table_;
}

std::string Gateway::admin_key() const {
  std::lock_guard<std::mutex> lock(mu_);
  return admin_key_;
}

std::string Gateway::last_reload_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_reload_error_;
}

Status Gateway::Reload() {
  std::lock_guard<std::mutex> reload(reload_mu_);
  const auto old = table();
  auto fail = [&](const Status& st) {
    PAGODA_LOG(Error) << "gateway: config reload refused, the previous config stays: " << st.message();
    metrics_.RecordReload(false);
    std::lock_guard<std::mutex> lock(mu_);
    last_reload_error_ = st.message();
    return st;
  };
  auto config = LoadGatewayConfig(options_.config_path);
  if (!config.ok()) return fail(config.status());
  // The listener stays: address, port and thread counts need a restart.
  const GatewayConfig& was = old->config();
  if (config->listen_address != was.listen_address || config->listen_port != was.listen_port ||
      config->io_threads != was.io_threads || config->upstream_threads != was.upstream_threads) {
    if (options_.listen_override.empty()) {
      PAGODA_LOG(Warning) << "gateway: the listen address and thread counts change only on restart";
    }
  }
  config->listen_address = was.listen_address;
  config->listen_port = was.listen_port;
  config->io_threads = was.io_threads;
  config->upstream_threads = was.upstream_threads;
  auto table = RoutingTable::Build(*config, old.get(), options_.env);
  if (!table.ok()) return fail(table.status());
  // The certificate, before anything is swapped: one that does not load
  // refuses the whole reload.
  const http::TlsFiles tls = ListenerTls(*config);
  if (tls.enabled() != server_->tls()) {
    PAGODA_LOG(Warning) << "gateway: turning TLS on or off on the listener changes only on restart";
  } else if (tls.enabled()) {
    if (Status st = server_->ReloadTls(tls); !st.ok()) return fail(st);
  }
  // Rollouts carry over (or abort) onto the new table before it serves.
  rollouts_->Adopt(*table, std::chrono::steady_clock::now());
  // The config's schedules (admin changes end here), applied before it serves.
  schedules_->Adopt(*table);
  {
    std::lock_guard<std::mutex> lock(mu_);
    table_ = std::move(table).value();
    admin_key_ = ReadAdminKey(*config, options_.env);
    last_reload_error_.clear();
  }
  feed_->Sync(*this->table());
  metrics_.RecordReload(true);
  PAGODA_LOG(Info) << "gateway: config reloaded from " << options_.config_path;
  return Status::Ok();
}

}  // namespace pagoda::gateway
