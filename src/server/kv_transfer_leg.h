// The prefill leg of a disaggregated request (docs/KV_OFFLOAD.md,
// "Prefill/decode disaggregation"): a chat or completion request carrying
// kv_transfer_params.do_remote_decode computes its prompt here, streams
// the prompt's KV blocks to the decode replica at remote_addr as they are
// computed (kvtransfer/kv_transfer_sender.h), and answers with one token and
// the transfer's outcome in `kv_transfer_params` once the decode replica
// has acknowledged the blocks (or the transfer failed: the decode replica
// then computes the prompt itself, so the request never fails for it).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "api/api_error.h"
#include "api/generation_options.h"
#include "engine/engine_request.h"
#include "kvtransfer/kv_transfer_sender.h"
#include "server/serve_context.h"

namespace pagoda::server {

// Checks a prefill leg (one prompt, n = 1, not streamed, a role that
// prefills, a valid remote_addr and transfer_id; 400 otherwise), sets the
// request to stop after one token, starts the sender and makes it the
// request's block sink. `requests` are the job's engine requests (one per
// prompt), `stream` and `n` the job's.
api::ApiResult<std::shared_ptr<kvtransfer::KvTransferSender>> StartPrefillLeg(ServeContext& ctx,
                                                                            const api::KvTransferParams& params,
                                                                            bool stream, int n,
                                                                            std::span<EngineRequest> requests);

// The leg's response body with "kv_transfer_params": {transfer_id, status
// ("ok" | "failed"), blocks, kept, bytes, seconds, error?} added, and the
// outcome counted in ctx.kv_transfer_sent.
std::string WithTransferResult(ServeContext& ctx, const std::string& body, const std::string& transfer_id,
                               const kvtransfer::KvTransferResult& result);

}  // namespace pagoda::server
