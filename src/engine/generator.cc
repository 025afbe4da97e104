#include "engine/generator.h"

#include <chrono>

#include "sampling/sampler.h"

namespace pagoda {

const char* StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kEog: return "eog";
    case StopReason::kLength: return "length";
    case StopReason::kContext: return "context";
    case StopReason::kCallback: return "stopped";
  }
  return "?";
}

Result<std::unique_ptr<Generator>> Generator::Create(Model& model, int32_t n_ctx,
                                                     std::function<bool(TokenId)> is_eog,
                                                     KvType kv_type) {
  if (n_ctx <= 0) return InvalidArgument("context size must be positive, got " + std::to_string(n_ctx));
  std::unique_ptr<Generator> g(new Generator(model, n_ctx, std::move(is_eog)));
  PAGODA_ASSIGN_OR_RETURN(auto kv, ContiguousKvCache::Create(model.kv_cache_spec(), 1, n_ctx, kv_type));
  g->kv_ = std::move(kv);
  g->logits_.resize(static_cast<size_t>(model.n_vocab()));
  g->work_.resize(static_cast<size_t>(model.n_vocab()));
  return g;
}

Result<GenerateResult> Generator::Generate(const GenerateRequest& req, const TokenCallback& on_token) {
  using Clock = std::chrono::steady_clock;
  const int64_t n_vocab = model_.n_vocab();
  if (req.prompt.empty()) return InvalidArgument("the prompt is empty (no tokens)");
  if (req.max_tokens <= 0) return InvalidArgument("max_tokens must be positive");
  for (TokenId t : req.prompt) {
    if (t < 0 || t >= n_vocab) return InvalidArgument("prompt token id " + std::to_string(t) + " is outside the vocabulary");
  }
  if (static_cast<int64_t>(req.prompt.size()) >= n_ctx_) {
    return InvalidArgument("the prompt has " + std::to_string(req.prompt.size()) +
                           " tokens, which does not leave room in a context of " + std::to_string(n_ctx_));
  }
  PAGODA_ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(req.sampling, static_cast<int32_t>(n_vocab)));

  kv_->RemoveSequence(0);
  GenerateResult res;
  res.n_prompt = static_cast<int32_t>(req.prompt.size());
  std::vector<TokenId> history(req.prompt.begin(), req.prompt.end());
  history.reserve(req.prompt.size() + static_cast<size_t>(req.max_tokens));

  // Prefill: the whole prompt in one batch (the model splits it into micro-batches).
  auto t0 = Clock::now();
  batch_.Clear();
  for (size_t i = 0; i < req.prompt.size(); ++i) {
    batch_.Add(req.prompt[i], static_cast<int32_t>(i), 0, i + 1 == req.prompt.size());
  }
  PAGODA_RETURN_IF_ERROR(model_.Forward(batch_, *kv_, logits_));
  auto t1 = Clock::now();
  res.prompt_seconds = std::chrono::duration<double>(t1 - t0).count();

  int32_t pos = res.n_prompt;
  for (;;) {
    work_ = logits_;
    TokenId id = sampler.Sample(work_, history, req.prompt.size());
    res.tokens.push_back(id);
    history.push_back(id);
    bool keep_going = on_token ? on_token(id, logits_) : true;
    if (!keep_going) { res.stop = StopReason::kCallback; break; }
    if (!req.ignore_eog && is_eog_ && is_eog_(id)) { res.stop = StopReason::kEog; break; }
    if (static_cast<int32_t>(res.tokens.size()) >= req.max_tokens) { res.stop = StopReason::kLength; break; }
    if (pos >= n_ctx_) { res.stop = StopReason::kContext; break; }
    batch_.Clear();
    batch_.Add(id, pos, 0, true, /*is_decode=*/true);
    PAGODA_RETURN_IF_ERROR(model_.Forward(batch_, *kv_, logits_));
    ++pos;
  }
  res.generate_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  return res;
}

}  // namespace pagoda
