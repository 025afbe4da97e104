// ServeContext: what every route handler borrows: the engine, the tokenizer,
// the prompt encoder (chat template, chat format), the served model's name and limits, and the pump that
// turns engine events into responses. Owned by OpenAiServer; every member is
// safe to use from any thread (the engine through Submit/stats only).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/generation_options.h"
#include "batch/batch_service.h"
#include "control/control_plane.h"
#include "chat/prompt_encoding.h"
#include "engine/engine.h"
#include "server/model_abilities.h"
#include "http/server.h"
#include "kvtransfer/transfer_inbox.h"
#include "sampling/grammar/grammar_cache.h"
#include "server/event_pump.h"
#include "tenancy/signed_headers.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

// `pagoda serve --role` (docs/KV_OFFLOAD.md, "Prefill/decode
// disaggregation"): which leg of a disaggregated request a replica takes.
// Every role also serves ordinary requests (the gateway's fallback).
enum class ServeRole : uint8_t {
  kBoth,     // either leg
  kPrefill,  // computes prompts and sends their KV (kv_transfer_params.do_remote_decode)
  kDecode,   // receives KV (--kv-transfer-listen); refuses prefill legs
};
const char* ServeRoleName(ServeRole r);

// What this replica's prefill legs sent (/metrics).
struct KvTransferSendStats {
  std::atomic<int64_t> ok{0}, failed{0}, blocks{0}, bytes{0};
  std::atomic<int64_t> nanos{0};
};

struct ServeContext {
  Engine* engine = nullptr;
  const Tokenizer* tokenizer = nullptr;
  // Chat template, specials and chat format (tool-call / reasoning dialect):
  // the encoding the gateway shares (chat/prompt_encoding.h).
  chat::PromptEncoder prompt;
  // Control tokens whose text is a chat-format marker ([TOOL_CALLS], ...):
  // their text goes to the output parser although it decodes to nothing.
  std::vector<std::pair<TokenId, std::string>> marker_tokens;
  grammar::GrammarCache* grammar_cache = nullptr;  // compiled constraints (thread-safe)
  ModelAbilities abilities;
  std::string model_id;  // the name /v1/models lists and requests must use
  int64_t created = 0;   // model card's `created`
  int32_t n_ctx = 0;
  api::RequestLimits limits;
  // The engine's waiting-queue bound (--max-waiting): a request that needs
  // more sequences than this could never be admitted, so it is a 400, not a 429.
  int32_t max_waiting = 0;
  // --request-timeout: each generation request's deadline from its arrival (0: none).
  std::chrono::milliseconds request_timeout{0};
  EventPump* pump = nullptr;
  // --tenant-secret-env: the secret the gateway signs tenant headers with
  // ("": tenant headers are ignored), and the replay cache they go through
  // (tenant_resolver.h). Never logged.
  std::string tenant_secret;
  // `--db`: keys, limits and metering (request_admission.h); null without.
  control::ControlPlane* control = nullptr;
  // `--data-dir`: the Files and Batch APIs (batch/batch_service.h); null without.
  batch::BatchService* batch = nullptr;
  tenancy::ReplayCache* tenant_replay = nullptr;
  // The HTTP server, for its counters on /metrics (set once it exists; null before).
  const http::Server* http = nullptr;
  std::atomic<bool> ready{false};  // the engine loop runs (health)
  // Prefill/decode disaggregation: the role, the fingerprint transferred
  // blocks carry (the weights alone: model/model_fingerprint.h without the
  // decode weights), how long a transfer may stall, what was sent, and the
  // receiving side's inbox (decode and both roles with
  // --kv-transfer-listen; null otherwise).
  ServeRole role = ServeRole::kBoth;
  uint64_t kv_transfer_fingerprint = 0;
  std::chrono::milliseconds kv_transfer_timeout{10'000};
  KvTransferSendStats kv_transfer_sent;
  const kvtransfer::TransferInbox* kv_inbox = nullptr;
};

}  // namespace pagoda::server
