#include "server/openai_server.h"

#include "api/response_common.h"
#include "batch/batch_setup.h"
#include "control/admin_routes.h"
#include "http/auth.h"
#include "http/server.h"
#include "kvtransfer/kv_transfer_receiver.h"
#include "sampling/grammar/token_matcher.h"
#include "server/event_pump.h"
#include "server/request_admission.h"
#include "server/routes.h"
#include "server/serve_context.h"

namespace pagoda::server {

struct OpenAiServer::State {
  ServeContext ctx;
  std::string api_key;
  std::unique_ptr<control::ControlPlane> control;  // --db; outlives the HTTP server (declared before it)
  std::chrono::milliseconds drain_timeout{0};
  // Destroyed in reverse: the HTTP server first, then the engine (whose
  // notifications post to the pump), then the pump.
  EventPump pump;
  grammar::GrammarCache grammar_cache;
  tenancy::ReplayCache tenant_replay;
  std::unique_ptr<Engine> engine;
  // KV transfers into the engine's memory tier: destroyed before the engine.
  std::unique_ptr<kvtransfer::TransferInbox> kv_inbox;
  kvtransfer::KvTransferReceiverOptions kv_receiver_options;
  std::unique_ptr<kvtransfer::KvTransferReceiver> kv_receiver;
  std::unique_ptr<http::Server> http;
  // Destroyed first: its runner sends lines through the routes above.
  std::unique_ptr<batch::BatchService> batch;
  bool started = false;
  bool stopped = false;
};

Result<std::unique_ptr<OpenAiServer>> OpenAiServer::Create(Model& model, const Tokenizer& tokenizer,
                                                           const std::string& chat_template_source,
                                                           EngineOptions engine, ServeOptions options) {
  if (!options.tenant_secret.empty() && options.tenant_secret.size() < tenancy::kMinSecretBytes) {
    return InvalidArgument("the tenant header secret must be at least " + std::to_string(tenancy::kMinSecretBytes) +
                           " bytes");
  }
  if (!options.control.store_url.empty() && !options.api_key.empty()) {
    return InvalidArgument("--api-key and --db exclude each other: with --db, tenants' keys authenticate");
  }
  std::unique_ptr<control::ControlPlane> control;
  if (!options.control.store_url.empty()) {
    auto cp = control::ControlPlane::Open(options.control);
    if (!cp.ok()) return cp.status();
    control = std::move(cp).value();
  }
  auto prompt = chat::MakePromptEncoder(tokenizer, chat_template_source);
  if (!prompt.ok()) return prompt.status();
  if (!engine.is_eog) engine.is_eog = [&tokenizer](TokenId id) { return tokenizer.IsEog(id); };
  // Structured outputs need the vocabulary's token bytes (built once).
  if (!engine.grammar_vocab) engine.grammar_vocab = grammar::TokenVocabIndex::Build(tokenizer);
  auto eng = Engine::Create(model, engine);
  if (!eng.ok()) return eng.status();
  // Prefill/decode roles: checked before anything else starts.
  if (options.role == ServeRole::kDecode && options.kv_transfer_listen.empty()) {
    return InvalidArgument("--role decode receives KV transfers: give it --kv-transfer-listen HOST:PORT");
  }
  kv::MemoryTier* kv_tier = (*eng)->kv_memory_tier();
  kvtransfer::HostPort kv_listen;
  if (!options.kv_transfer_listen.empty()) {
    if (options.role == ServeRole::kPrefill) {
      return InvalidArgument("--kv-transfer-listen receives KV for decoding; a --role prefill replica does not");
    }
    if (kv_tier == nullptr) {
      return InvalidArgument("receiving KV transfers needs the memory tier (--kv-offload memory=SIZE)");
    }
    auto at = kvtransfer::ParseHostPort(options.kv_transfer_listen);
    if (!at.ok()) return at.status().WithContext("--kv-transfer-listen");
    kv_listen = *at;
  }

  std::unique_ptr<OpenAiServer> server(new OpenAiServer());
  server->state_ = std::make_unique<State>();
  State& st = *server->state_;
  st.engine = std::move(eng).value();
  st.api_key = options.api_key;
  st.control = std::move(control);
  st.drain_timeout = options.drain_timeout;
  const PagedKvCache& kv = st.engine->kv_cache();  // safe: the engine thread has not started
  server->kv_capacity_tokens_ = static_cast<int64_t>(kv.pool().n_blocks()) * kv.block_size();

  ServeContext& ctx = st.ctx;
  ctx.engine = st.engine.get();
  ctx.tokenizer = &tokenizer;
  ctx.prompt = std::move(prompt).value();
  for (const std::string& m : chat::ControlMarkers(ctx.prompt.format)) {
    const TokenId id = tokenizer.FindToken(m);
    if (id != kNoToken && tokenizer.TokenToPiece(id, false).empty()) ctx.marker_tokens.emplace_back(id, m);
  }
  ctx.grammar_cache = &st.grammar_cache;
  ctx.abilities = ModelAbilitiesOf(model, tokenizer, engine);
  ctx.model_id = options.model_id;
  ctx.created = api::UnixTimeNow();
  ctx.n_ctx = engine.n_ctx;
  ctx.limits = options.limits;
  ctx.limits.max_n = std::min(ctx.limits.max_n, engine.max_n);
  ctx.max_waiting = engine.max_waiting;
  ctx.request_timeout = options.request_timeout;
  ctx.pump = &st.pump;
  ctx.tenant_secret = options.tenant_secret;
  ctx.tenant_replay = &st.tenant_replay;
  ctx.role = options.role;
  ctx.kv_transfer_timeout = options.kv_transfer_timeout;
  ctx.kv_transfer_fingerprint =
      options.kv_transfer_fingerprint != 0 ? options.kv_transfer_fingerprint : engine.model_fingerprint;
  if (!options.kv_transfer_listen.empty()) {
    std::vector<uint64_t> accepted = {kv_tier->layout().model_fingerprint};
    if (ctx.kv_transfer_fingerprint != accepted[0]) accepted.push_back(ctx.kv_transfer_fingerprint);
    st.kv_inbox = std::make_unique<kvtransfer::TransferInbox>(*kv_tier, std::move(accepted));
    st.kv_receiver_options.listen = kv_listen;
    st.kv_receiver_options.idle_timeout = options.kv_transfer_timeout;
    ctx.kv_inbox = st.kv_inbox.get();
  }

  http::Router router;
  AddChatRoutes(router, ctx);
  AddCompletionRoutes(router, ctx);
  AddModelRoutes(router, ctx);
  AddMetricsRoutes(router, ctx);
  AddTokenizeRoutes(router, ctx);
  AddEmbeddingRoutes(router, ctx);
  AddRerankRoutes(router, ctx);
  AddConsoleRoutes(router, ctx);
  // The console's JSON (/console/api/) is guarded as /v1/ is: one key check.
  constexpr const char* kKeyedPrefixes[] = {"/v1/", "/console/api/"};
  if (!st.api_key.empty()) {
    // The single static key of --api-key keeps working over plain HTTP, as
    // before; the control plane's tenant and admin keys need TLS.
    for (const char* prefix : kKeyedPrefixes) {
      router.AddGuard(prefix, [key = st.api_key](const http::Request& r) { return http::RequireBearerToken(r, key); });
    }
  }
  if (control::ControlPlane* cp = st.control.get()) {
    ctx.control = cp;
    // Generation routes authenticate with the model's scope themselves; the
    // rest of /v1/ needs a valid key, and the console's figures (this
    // server's one model) a key scoped to the model.
    auto guard = [cp, model = options.model_id](const http::Request& r) -> std::optional<http::Response> {
      if (r.path == "/v1/chat/completions" || r.path == "/v1/completions") return std::nullopt;
      auto who = cp->Authenticate(r, r.path.starts_with("/console/api/") ? std::string_view(model) : "");
      if (auto* refused = std::get_if<http::Response>(&who)) return std::move(*refused);
      return std::nullopt;
    };
    for (const char* prefix : kKeyedPrefixes) router.AddGuard(prefix, guard);
    router.AddGuard("/admin/", [key = options.admin_key, allow = options.control.allow_insecure_keys](
                                   const http::Request& r) {
      return control::RequireAdminKey(r, key, allow, "start pagoda serve with --admin-key-env");
    });
    control::AdminRouteOptions ao;
    ao.pepper = options.control.key_pepper;
    ao.sla = &cp->sla();
    control::AddControlAdminRoutes(router, cp->store(), std::move(ao));
  }
  // Lines go through a copy of the routes so far (generation, guards): the
  // same admission, limits and metering as a request from the network.
  batch::BatchSetup bs;
  bs.data_dir = options.batch_data_dir;
  bs.options = options.batch;
  bs.options.limits = ctx.limits;
  bs.options.deployment = ctx.model_id;
  bs.control = st.control.get();
  bs.api_key = st.api_key;
  auto service = batch::OpenBatchService(std::move(bs), std::make_shared<const http::Router>(router));
  if (!service.ok()) return service.status();
  st.batch = std::move(service).value();
  ctx.batch = st.batch.get();
  // Without a control plane, --api-key (if any) was checked by the /v1/ guard.
  batch::AddBatchRoutesFor(router, st.batch.get(), st.control.get(), "start pagoda serve with --data-dir DIR");
  http::ServerOptions http_options;
  http_options.address = options.host;
  http_options.port = options.port;
  http_options.io_threads = options.io_threads;
  http_options.tls = {options.tls_cert_file, options.tls_key_file};
  if (st.batch) {
    // Uploads: the file limit plus room for the multipart framing.
    http_options.max_body_bytes =
        std::max<size_t>(http_options.max_body_bytes, static_cast<size_t>(options.batch.max_file_bytes) + (1u << 20));
  }
  st.http = std::make_unique<http::Server>(http_options, std::move(router));
  ctx.http = st.http.get();
  return server;
}

OpenAiServer::~OpenAiServer() {
  if (state_) Shutdown(std::chrono::milliseconds(0));
}

Status OpenAiServer::Start() {
  State& st = *state_;
  st.engine->Start();
  st.started = true;
  if (st.kv_inbox) {
    auto receiver = kvtransfer::KvTransferReceiver::Start(st.kv_receiver_options, *st.kv_inbox);
    if (!receiver.ok()) {
      StopBackend();
      return receiver.status().WithContext("--kv-transfer-listen");
    }
    st.kv_receiver = std::move(receiver).value();
  }
  st.ctx.ready.store(true);
  Status s = st.http->Start();
  if (!s.ok()) {
    st.ctx.ready.store(false);
    StopBackend();
    return s;
  }
  if (st.batch) st.batch->Start();
  return s;
}

uint16_t OpenAiServer::port() const { return state_->http->port(); }

uint16_t OpenAiServer::kv_transfer_port() const {
  return state_->kv_receiver ? state_->kv_receiver->port() : 0;
}

void OpenAiServer::RunUntilSignal() {
  http::Server& http = *state_->http;
  std::function<void()> on_hangup;
  if (http.tls()) {
    // ReloadTls logs the outcome; a refused pair leaves the old one serving.
    on_hangup = [&http] { (void)http.ReloadTls(); };
  }
  http.RunUntilSignal(state_->drain_timeout, std::move(on_hangup));
  Shutdown(std::chrono::milliseconds(0));
}

void OpenAiServer::Shutdown(std::chrono::milliseconds deadline) {
  State& st = *state_;
  if (st.stopped) return;
  st.ctx.ready.store(false);
  // Batch lines first: those in flight may finish (and are committed) while
  // the engine still runs; the rest stay pending for the next start.
  if (st.batch) st.batch->Stop(deadline);
  // The HTTP server waits for the streams in flight; the engine keeps running
  // them meanwhile. At the deadline the rest are cancelled.
  if (st.http) st.http->Shutdown(deadline);
  StopBackend();
}

void OpenAiServer::StopBackend() {
  State& st = *state_;
  if (st.stopped) return;
  st.stopped = true;
  if (st.batch) st.batch->Stop(std::chrono::milliseconds(0));
  if (st.kv_receiver) st.kv_receiver->Stop();
  st.engine->Stop(std::chrono::milliseconds(0));
  st.pump.Stop();
}

}  // namespace pagoda::server
