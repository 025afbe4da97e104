// OpenAiServer: `pagoda serve` as a library object. Wires one model's engine,
// tokenizer and chat template to the HTTP server with the OpenAI-compatible
// routes (routes.h), and runs the graceful shutdown: stop admitting, let
// streams finish until a deadline, cancel the rest, stop the engine.
// Thread safety: Create/Start/Shutdown/RunUntilSignal from one controlling
// thread; port() and kv_capacity_tokens() from any.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "api/generation_options.h"
#include "base/status.h"
#include "engine/engine.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

#include "batch/batch_service.h"
#include "control/control_plane.h"
#include "server/serve_context.h"

namespace pagoda::server {

struct ServeOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: ephemeral
  std::string api_key;   // "": no authentication
  std::string model_id = "pagoda";
  int io_threads = 2;
  // How long SIGTERM lets running requests and streams finish.
  std::chrono::milliseconds drain_timeout{30'000};
  // Each generation request's deadline, from its arrival (0: none). Past it
  // the engine drops the request: 504 request_timeout, or an error event in
  // a stream that has begun.
  std::chrono::milliseconds request_timeout{0};
  api::RequestLimits limits;
  // https: PEM certificate (chain) and unencrypted private key; both empty:
  // plain HTTP. SIGHUP reloads them (new connections get the new
  // certificate; a pair that does not load is refused and the old one stays).
  std::string tls_cert_file;
  std::string tls_key_file;
  // The secret the gateway signs tenant headers with (docs/CONTROL_PLANE_SIGNING.md;
  // `pagoda serve --tenant-secret-env`); "": tenant headers are ignored. At
  // least tenancy::kMinSecretBytes. Never logged.
  std::string tenant_secret;
  // The control plane inside this server (`--db`; docs/CONTROL_PLANE.md):
  // tenants' API keys, limits and usage metering, with the admin API under
  // /admin/ behind `admin_key`. control.store_url "": none. Exclusive with api_key.
  control::ControlPlaneOptions control;
  std::string admin_key;
  // The Files and Batch APIs (docs/BATCH.md), on when batch_data_dir is set
  // (`--data-dir`): file contents under it, batch and line state in the
  // control plane's store (--db) or else in <batch_data_dir>/batch.db.
  std::string batch_data_dir;
  batch::BatchOptions batch;
  // Prefill/decode disaggregation (docs/KV_OFFLOAD.md): the role; where KV
  // transfers are received ("host:port"; "": not received; needs the
  // engine's memory tier); how long a transfer may stall; and the
  // weights-only model fingerprint stamped on blocks sent and accepted (with
  // the engine's own) on blocks received.
  ServeRole role = ServeRole::kBoth;
  std::string kv_transfer_listen;
  std::chrono::milliseconds kv_transfer_timeout{10'000};
  uint64_t kv_transfer_fingerprint = 0;
};

class OpenAiServer {
 public:
  // `model` and `tokenizer` must outlive the server. chat_template_source:
  // Jinja (ChatTemplateSource gives the GGUF's, or ChatML). engine.is_eog
  // defaults to the tokenizer's IsEog.
  static Result<std::unique_ptr<OpenAiServer>> Create(Model& model, const Tokenizer& tokenizer,
                                                      const std::string& chat_template_source,
                                                      EngineOptions engine, ServeOptions options);
  ~OpenAiServer();  // Shutdown(0) if still running
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Starts the engine loop, then listens. Error: the address cannot be bound.
  Status Start();
  uint16_t port() const;
  // The KV transfer listener's port (0 when not listening).
  uint16_t kv_transfer_port() const;
  // Tokens the KV cache holds (all blocks), known from Create on.
  int64_t kv_capacity_tokens() const { return kv_capacity_tokens_; }

  // Blocks until SIGINT/SIGTERM, then Shutdown(options.drain_timeout). With
  // TLS, each SIGHUP meanwhile reloads the certificate and key.
  void RunUntilSignal();
  // Stops admitting, lets responses in flight finish until `deadline`,
  // cancels the rest, stops the engine. Idempotent.
  void Shutdown(std::chrono::milliseconds deadline);

 private:
  struct State;
  OpenAiServer() = default;
  void StopBackend();

  std::unique_ptr<State> state_;
  int64_t kv_capacity_tokens_ = 0;
};

}  // namespace pagoda::server
