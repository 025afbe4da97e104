#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace pagoda {
namespace {

// Negative log-likelihood of `target` under the logits row (log-softmax in double).
double Nll(std::span<const float> logits, TokenId target) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
  return std::log(sum) + mx - logits[target];
}

TokenId Argmax(std::span<const float> logits) {
  return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Status CheckTokens(std::span<const TokenId> tokens, int64_t n_vocab) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      return InvalidArgument("token " + std::to_string(i) + " (id " + std::to_string(tokens[i]) +
                             ") is outside the vocabulary of " + std::to_string(n_vocab));
    }
  }
  return Status::Ok();
}

// Feeds one sequence through `model` with a private cache: a prefill step of
// the first n_prefill tokens, then one decode step per further token. Calls
// on_logits(i, logits) with the prediction made after token i, for i from
// n_prefill - 1 to tokens.size() - 1.
template <typename OnLogits>
Status RunSequence(Model& model, KvType kv_type, std::span<const TokenId> tokens, int32_t n_prefill,
                   OnLogits&& on_logits) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  PAGODA_ASSIGN_OR_RETURN(auto kv, ContiguousKvCache::Create(model.kv_cache_spec(), 1, n, kv_type));
  std::vector<float> logits(static_cast<size_t>(model.n_vocab()));
  Batch batch;
  for (int32_t i = 0; i < n_prefill; ++i) batch.Add(tokens[i], i, 0, i == n_prefill - 1);
  PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
  on_logits(n_prefill - 1, std::span<const float>(logits));
  for (int32_t i = n_prefill; i < n; ++i) {
    batch.Clear();
    batch.Add(tokens[i], i, 0, /*logits=*/true, /*is_decode=*/true);
    PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    on_logits(i, std::span<const float>(logits));
  }
  return Status::Ok();
}

}  // namespace

Result<PerplexityResult> ComputePerplexity(Model& model, std::span<const TokenId> tokens,
                                           const PerplexityOptions& options) {
  const int32_t n_ctx = options.n_ctx;
  if (n_ctx < 4) return InvalidArgument("perplexity needs a window of at least 4 tokens, got " + std::to_string(n_ctx));
  PAGODA_RETURN_IF_ERROR(CheckTokens(tokens, model.n_vocab()));
  int64_t n_windows = static_cast<int64_t>(tokens.size()) / n_ctx;
  if (options.max_windows > 0) n_windows = std::min<int64_t>(n_windows, options.max_windows);
  if (n_windows == 0) {
    return InvalidArgument("the text has " + std::to_string(tokens.size()) + " tokens, less than one window of " +
                           std::to_string(n_ctx) + " (lower the context size)");
  }
  const int32_t half = n_ctx / 2;
  double nll = 0.0;
  int64_t n_scored = 0;
  for (int64_t w = 0; w < n_windows; ++w) {
    const auto window = tokens.subspan(static_cast<size_t>(w * n_ctx), static_cast<size_t>(n_ctx));
    // The prediction after token i scores token i + 1; the last token predicts nothing.
    PAGODA_RETURN_IF_ERROR(RunSequence(model, options.kv_type, window.first(n_ctx - 1), half,
                                       [&](int32_t i, std::span<const float> logits) {
                                         nll += Nll(logits, window[i + 1]);
                                         ++n_scored;
                                       }));
  }
  PerplexityResult r;
  r.n_windows = static_cast<int32_t>(n_windows);
  r.n_scored = n_scored;
  r.mean_nll = nll / static_cast<double>(n_scored);
  r.perplexity = std::exp(r.mean_nll);
  return r;
}

Result<AgreementResult> CompareTopTokens(const EvalConfig& reference, const EvalConfig& test,
                                         std::span<const std::vector<TokenId>> prompts, int32_t n_generate) {
  if (reference.model == nullptr || test.model == nullptr) return InvalidArgument("CompareTopTokens needs two models");
  if (reference.model->n_vocab() != test.model->n_vocab()) {
    return InvalidArgument("the two models have different vocabularies");
  }
  if (n_generate < 1) return InvalidArgument("n_generate must be positive");
  AgreementResult r;
  for (const std::vector<TokenId>& prompt : prompts) {
    if (prompt.empty()) return InvalidArgument("empty prompt");
    PAGODA_RETURN_IF_ERROR(CheckTokens(prompt, reference.model->n_vocab()));
    const int32_t n_prompt = static_cast<int32_t>(prompt.size());
    // Reference: greedy generation, one decode step per token.
    std::vector<TokenId> seq = prompt;
    std::vector<TokenId> ref_top;
    {
      PAGODA_ASSIGN_OR_RETURN(auto kv, ContiguousKvCache::Create(reference.model->kv_cache_spec(), 1,
                                                                 n_prompt + n_generate, reference.kv_type));
      std::vector<float> logits(static_cast<size_t>(reference.model->n_vocab()));
      Batch batch;
      for (int32_t i = 0; i < n_prompt; ++i) batch.Add(prompt[i], i, 0, i == n_prompt - 1);
      for (int32_t g = 0; g < n_generate; ++g) {
        PAGODA_RETURN_IF_ERROR(reference.model->Forward(batch, *kv, logits));
        ref_top.push_back(Argmax(logits));
        seq.push_back(ref_top.back());
        batch.Clear();
        batch.Add(seq.back(), static_cast<int32_t>(seq.size()) - 1, 0, true, /*is_decode=*/true);
      }
    }
    // Test: teacher-forced over prompt + the reference's continuation.
    PAGODA_RETURN_IF_ERROR(RunSequence(*test.model, test.kv_type,
                                       std::span<const TokenId>(seq).first(seq.size() - 1), n_prompt,
                                       [&](int32_t i, std::span<const float> logits) {
                                         r.n_agree += Argmax(logits) == ref_top[i - (n_prompt - 1)];
                                         ++r.n_positions;
                                       }));
  }
  return r;
}

}  // namespace pagoda
