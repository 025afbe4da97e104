// Accuracy measurements of a Model under a KV cache type (and whatever
// weights the caller loaded it with, e.g. --decode-weights): perplexity over a
// token stream, and teacher-forced top-1 agreement between two
// configurations. What `pagoda perplexity` and the accuracy tests run.
//
// Per-phase evaluation: each window's first half (the context) is one prefill
// step; its second half is fed one token per step, marked as decode, and those
// tokens are scored. So every scored prediction reads the cache of all
// positions as stored (quantized, for fp8 / int8 / bf16 KV; as every step of
// the server does, docs/KV_CACHE.md) and runs through the decode weights, as
// generation would.
// Runs on the calling thread (the model's pool does the kernels).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "sampling/sampling_params.h"  // TokenId

namespace pagoda {

struct PerplexityOptions {
  int32_t n_ctx = 512;           // window length in tokens (>= 4)
  KvType kv_type = KvType::kF16;
  int32_t max_windows = 0;       // 0: as many whole windows as the text holds
};

struct PerplexityResult {
  double perplexity = 0;   // exp(mean negative log-likelihood) of the scored tokens
  double mean_nll = 0;
  int64_t n_scored = 0;    // tokens scored: windows x (n_ctx - n_ctx / 2)
  int32_t n_windows = 0;
};

// Non-overlapping windows of n_ctx tokens; in each, the tokens at positions
// [n_ctx / 2, n_ctx) are scored given everything before them in the window.
// InvalidArgument when tokens hold no whole window or a token is outside the
// vocabulary.
Result<PerplexityResult> ComputePerplexity(Model& model, std::span<const TokenId> tokens,
                                           const PerplexityOptions& options);

// One side of a comparison: a model (weights) and its KV cache type.
struct EvalConfig {
  Model* model = nullptr;
  KvType kv_type = KvType::kF16;
};

struct AgreementResult {
  int64_t n_positions = 0;  // predictions compared
  int64_t n_agree = 0;      // of those, same argmax token
  double fraction() const { return n_positions > 0 ? static_cast<double>(n_agree) / n_positions : 0.0; }
};

// For each prompt: the reference configuration prefills it and generates
// n_generate tokens greedily (decode steps), recording its argmax at each
// step; the test configuration is then fed the same prompt and the same
// continuation (teacher forcing, so one early flip cannot cascade) and its
// argmax compared at each of those n_generate predictions. Ties go to the
// lowest token id. Both models must have the same vocabulary.
Result<AgreementResult> CompareTopTokens(const EvalConfig& reference, const EvalConfig& test,
                                         std::span<const std::vector<TokenId>> prompts, int32_t n_generate);

}  // namespace pagoda
