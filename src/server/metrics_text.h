// Prometheus text exposition (format 0.0.4) of EngineStats, with `pagoda:`
// names that mirror vLLM's `vllm:` metrics so dashboards carry over.
// Histograms are written with cumulative buckets, `+Inf`, `_sum`, `_count`.
#pragma once

#include <string>
#include <string_view>

#include "engine/engine_stats.h"
#include "http/server.h"
#include "kvtransfer/transfer_inbox.h"
#include "server/serve_context.h"

namespace pagoda::server {

std::string RenderPrometheus(const EngineStats& stats, std::string_view model_name);
// The HTTP server's own: pagoda:tls_handshake_failures_total (plain HTTP to
// the TLS port, a bad client hello, a client refusing the certificate, a
// handshake timing out; always 0 on a plain HTTP server).
std::string RenderPrometheus(const http::ServerStats& stats, std::string_view model_name);
// Prefill/decode disaggregation (docs/KV_OFFLOAD.md): pagoda:serve_role{role},
// pagoda:kv_transfer_sent_*, and pagoda:kv_transfer_received_* when
// `received` is set (a replica that receives transfers).
std::string RenderKvTransferMetrics(std::string_view model_name, const char* role, const KvTransferSendStats& sent,
                                   const kvtransfer::InboxStats* received);

}  // namespace pagoda::server
