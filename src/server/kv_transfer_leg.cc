#include "server/kv_transfer_leg.h"

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/prometheus_text.h"
#include "kvtransfer/socket_io.h"

namespace pagoda::server {

const char* ServeRoleName(ServeRole r) {
  switch (r) {
    case ServeRole::kPrefill: return "prefill";
    case ServeRole::kDecode: return "decode";
    case ServeRole::kBoth: break;
  }
  return "both";
}

namespace {

api::ApiError LegError(const std::string& message) {
  return api::InvalidValue("kv_transfer_params", "Invalid 'kv_transfer_params': " + message);
}

}  // namespace

api::ApiResult<std::shared_ptr<kvtransfer::KvTransferSender>> StartPrefillLeg(ServeContext& ctx,
                                                                            const api::KvTransferParams& params,
                                                                            const api::GenerationOptions& options,
                                                                            size_t n_prompts, EngineRequest& request) {
  if (ctx.role == ServeRole::kDecode) return LegError("this replica's role is decode; it does not run prefill legs.");
  if (options.stream || options.n != 1 || n_prompts != 1) {
    return LegError("a prefill leg has one prompt, n = 1 and stream = false.");
  }
  auto to = kvtransfer::ParseHostPort(params.remote_addr);
  if (!to.ok()) return LegError("remote_addr: " + to.status().message());
  if (!kvtransfer::ValidTransferId(params.transfer_id)) {
    return LegError("transfer_id must be 1-128 characters of [A-Za-z0-9._-].");
  }
  kvtransfer::KvTransferSenderOptions so;
  so.to = *to;
  so.transfer_id = params.transfer_id;
  so.layout = ctx.engine->kv_block_layout();
  so.layout.model_fingerprint = ctx.kv_transfer_fingerprint;
  so.timeout = ctx.kv_transfer_timeout;
  auto sender = kvtransfer::KvTransferSender::Start(so);
  if (!sender.ok()) return LegError(sender.status().message());
  request.max_tokens = 1;  // the decode replica generates; one token ends the prefill
  request.kv_export = *sender;
  return std::move(sender).value();
}

std::string WithTransferResult(ServeContext& ctx, const std::string& body, const std::string& transfer_id,
                               const kvtransfer::KvTransferResult& result) {
  KvTransferSendStats& s = ctx.kv_transfer_sent;
  (result.status.ok() ? s.ok : s.failed).fetch_add(1, std::memory_order_relaxed);
  s.blocks.fetch_add(result.blocks, std::memory_order_relaxed);
  s.bytes.fetch_add(result.bytes, std::memory_order_relaxed);
  s.nanos.fetch_add(static_cast<int64_t>(result.seconds * 1e9), std::memory_order_relaxed);
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return body;
  nlohmann::json p = {{"transfer_id", transfer_id},
                      {"status", result.status.ok() ? "ok" : "failed"},
                      {"blocks", result.blocks},
                      {"kept", result.kept},
                      {"bytes", result.bytes},
                      {"seconds", result.seconds}};
  if (!result.status.ok()) p["error"] = result.status.message();
  j["kv_transfer_params"] = std::move(p);
  return j.dump();
}

std::string RenderKvTransferMetrics(const ServeContext& ctx) {
  const std::string labels = "model_name=\"" + PromLabel(ctx.model_id) + "\"";
  std::string out;
  auto line = [&](const char* name, const char* type, const char* help, const std::string& extra, double v) {
    char value[64];
    std::snprintf(value, sizeof value, "%.17g", v);
    out += std::string("# HELP pagoda:") + name + " " + help + "\n# TYPE pagoda:" + name + " " + type + "\n";
    out += std::string("pagoda:") + name + "{" + labels + extra + "} " + value + "\n";
  };
  line("serve_role", "gauge", "This replica's --role (prefill, decode or both) as a label; always 1.",
       std::string(",role=\"") + ServeRoleName(ctx.role) + "\"", 1);
  const KvTransferSendStats& s = ctx.kv_transfer_sent;
  out += "# HELP pagoda:kv_transfer_sent_total Prefill legs whose KV transfer ended, by outcome.\n"
         "# TYPE pagoda:kv_transfer_sent_total counter\n";
  out += "pagoda:kv_transfer_sent_total{" + labels + ",outcome=\"ok\"} " + std::to_string(s.ok.load()) + "\n";
  out += "pagoda:kv_transfer_sent_total{" + labels + ",outcome=\"failed\"} " + std::to_string(s.failed.load()) + "\n";
  line("kv_transfer_sent_blocks_total", "counter", "KV blocks sent to decode replicas.", "",
       static_cast<double>(s.blocks.load()));
  line("kv_transfer_sent_bytes_total", "counter", "Bytes of KV block records sent to decode replicas.", "",
       static_cast<double>(s.bytes.load()));
  line("kv_transfer_sent_seconds_total", "counter", "Seconds from connect to acknowledgement of the transfers sent.",
       "", static_cast<double>(s.nanos.load()) * 1e-9);
  if (ctx.kv_inbox != nullptr) {
    const kvtransfer::InboxStats r = ctx.kv_inbox->stats();
    out += "# HELP pagoda:kv_transfer_received_total KV transfers received from prefill replicas, by outcome.\n"
           "# TYPE pagoda:kv_transfer_received_total counter\n";
    out += "pagoda:kv_transfer_received_total{" + labels + ",outcome=\"ok\"} " + std::to_string(r.transfers) + "\n";
    out += "pagoda:kv_transfer_received_total{" + labels + ",outcome=\"refused\"} " +
           std::to_string(r.refused_transfers) + "\n";
    line("kv_transfer_received_blocks_total", "counter", "KV blocks received and kept in the memory tier.", "",
         static_cast<double>(r.blocks));
    line("kv_transfer_converted_blocks_total", "counter",
         "Received KV blocks converted from the prefill replica's KV type.", "", static_cast<double>(r.converted));
    line("kv_transfer_refused_blocks_total", "counter",
         "Received KV block records refused (checksum, layout, another model).", "", static_cast<double>(r.refused));
    line("kv_transfer_received_bytes_total", "counter", "Bytes of KV block records received.", "",
         static_cast<double>(r.bytes));
  }
  return out;
}

}  // namespace pagoda::server
