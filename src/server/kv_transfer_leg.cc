#include "server/kv_transfer_leg.h"

#include <chrono>

#include <nlohmann/json.hpp>

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
                                                                            bool stream, int n,
                                                                            std::span<EngineRequest> requests) {
  if (ctx.role == ServeRole::kDecode) return LegError("this replica's role is decode; it does not run prefill legs.");
  if (stream || n != 1 || requests.size() != 1) {
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
  requests[0].max_tokens = 1;  // the decode replica generates; one token ends the prefill
  requests[0].kv_export = *sender;
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

}  // namespace pagoda::server
