// Generator: runs one sequence from prompt to stop (EOG token, max_tokens or
// the context limit) through a Model and a Sampler, handing each new token to
// a callback. It is what `pagoda generate` uses, and the single-sequence
// reference the batching server is compared against. Not thread-safe: one
// thread drives it (it owns the sequence's KV cache).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "sampling/sampling_params.h"

namespace pagoda {

enum class StopReason { kEog, kLength, kContext, kCallback };
const char* StopReasonName(StopReason r);

struct GenerateRequest {
  std::vector<TokenId> prompt;   // already tokenized (BOS included if wanted); non-empty
  int32_t max_tokens = 128;      // > 0
  SamplingParams sampling;
  bool ignore_eog = false;       // keep going past end-of-generation tokens (benchmarks)
};

struct GenerateResult {
  std::vector<TokenId> tokens;   // generated ids (an EOG token that stopped it is included)
  StopReason stop = StopReason::kLength;
  int32_t n_prompt = 0;
  double prompt_seconds = 0;     // prefill, up to the first sampled token
  double generate_seconds = 0;   // the decode steps after the first token
};

class Generator {
 public:
  // is_eog tells which ids end generation (the tokenizer's IsEog); may be empty.
  // kv_type: element type of the sequence's KV cache.
  static Result<std::unique_ptr<Generator>> Create(Model& model, int32_t n_ctx,
                                                   std::function<bool(TokenId)> is_eog,
                                                   KvType kv_type = KvType::kF16);

  int32_t n_ctx() const { return n_ctx_; }

  // on_token(id, logits) is called for each sampled token with the raw logits
  // it was drawn from ([n_vocab], before penalties); returning false stops.
  using TokenCallback = std::function<bool(TokenId, std::span<const float>)>;
  Result<GenerateResult> Generate(const GenerateRequest& request, const TokenCallback& on_token);

 private:
  Generator(Model& model, int32_t n_ctx, std::function<bool(TokenId)> is_eog)
      : model_(model), n_ctx_(n_ctx), is_eog_(std::move(is_eog)) {}

  Model& model_;
  int32_t n_ctx_;
  std::function<bool(TokenId)> is_eog_;
  std::unique_ptr<KvCache> kv_;
  Batch batch_;
  std::vector<float> logits_;
  std::vector<float> work_;
};

}  // namespace pagoda
