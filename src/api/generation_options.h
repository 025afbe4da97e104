// GenerationOptions: the request fields that /v1/chat/completions and
// /v1/completions share (model, length, sampling, stop, n, stream), parsed and
// range-checked. RequestLimits bounds what one request may ask for.
// Model-dependent checks (context length, vocabulary) happen later, in the
// server, with the helpers of token_budget.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "api/api_error.h"
#include "api/structured_output.h"
#include "base/workload_class.h"

namespace pagoda::api {

struct RequestLimits {
  int max_n = 16;                   // choices per request
  int max_stop = 16;                // stop sequences (OpenAI allows 4)
  int max_stop_bytes = 512;         // bytes per stop sequence
  int max_logit_bias = 1024;        // logit_bias entries
  int max_top_logprobs = 20;        // chat top_logprobs
  int max_completion_logprobs = 5;  // completions logprobs
  // Unknown top-level fields: 400 "Unrecognized request argument" (OpenAI's
  // behaviour) when true; skipped when false.
  bool reject_unknown_fields = true;
};

// vLLM's kv_transfer_params, as the gateway sets it on the prefill leg of a
// disaggregated request (docs/KV_OFFLOAD.md, "Prefill/decode
// disaggregation"): compute the prompt and stream its KV blocks to the
// decode replica at remote_addr ("host:port"). Other keys are ignored.
struct KvTransferParams {
  bool do_remote_decode = false;
  std::string remote_addr;
  std::string transfer_id;
};

struct GenerationOptions {
  std::string model;  // "" when absent: the server's default model
  // From max_completion_tokens when present, else max_tokens; >= 1.
  // Absent: the endpoint's default (completions: 16; chat: the rest of the context).
  std::optional<int64_t> max_tokens;
  std::string max_tokens_param = "max_tokens";  // the field that set it, for errors
  std::optional<double> temperature;         // [0, 2]
  std::optional<double> top_p;               // (0, 1]
  std::optional<int32_t> top_k;              // >= 0; 0 = off (-1 accepted as off)
  std::optional<double> min_p;               // [0, 1]
  std::optional<double> presence_penalty;    // [-2, 2]
  std::optional<double> frequency_penalty;   // [-2, 2]
  std::optional<double> repetition_penalty;  // (0, 10]
  int n = 1;                                 // [1, limits.max_n]
  std::vector<std::string> stop;             // non-empty strings
  std::optional<int64_t> seed;
  std::map<int32_t, float> logit_bias;  // token id -> bias in [-100, 100]; ids checked against the vocab later
  bool stream = false;
  // Extension (vLLM, llama.cpp): keep generating past end-of-generation tokens.
  bool ignore_eos = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string user;            // opaque end-user id (also from safety_identifier)
  // OpenAI's service_tier, as a workload class (base/workload_class.h):
  // "flex" / "batch", "default" / "interactive", "priority" / "realtime";
  // absent or "auto": the key's default. The control plane clamps it to
  // what the caller's key allows.
  std::optional<WorkloadClass> service_tier;
  StructuredOutput structured;  // response_format / grammar / regex
  std::optional<KvTransferParams> kv_transfer;  // kv_transfer_params
};

namespace internal {

enum class FieldOutcome { kHandled, kNotMine };

// Reads `key` into `options` when it is one of the shared fields.
// Sets *error (and returns kHandled) when the value is bad.
FieldOutcome ReadGenerationField(std::string_view key, const nlohmann::json& value, const RequestLimits& limits,
                                 GenerationOptions* options, std::optional<ApiError>* error);

// Cross-field checks after all fields were read (stream_options needs stream).
std::optional<ApiError> FinishGenerationOptions(const nlohmann::json& body, GenerationOptions* options);
// max_tokens 0 parses (completions' echo scores a prompt without generating);
// everywhere else it is the error a minimum of 1 gives.
std::optional<ApiError> CheckMaxTokensPositive(const GenerationOptions& options);

}  // namespace internal

}  // namespace pagoda::api
