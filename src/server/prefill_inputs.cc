#include "server/prefill_inputs.h"

#include <algorithm>
#include <cmath>

#include "api/token_budget.h"

namespace pagoda::server {
namespace {

// Qwen3-Reranker's prompt (its model card): the judgement asked of the
// model, then the pair; the score is P("yes") at the last position.
constexpr const char* kRerankSystem =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
constexpr const char* kRerankInstruct = "Given a web search query, retrieve relevant passages that answer the query";
constexpr const char* kRerankSuffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

api::ApiError TooLong(const ServeContext& ctx, size_t n, const std::string& param) {
  return api::ContextLengthExceeded("Invalid '" + param + "': " + std::to_string(n) + " tokens, more than the " +
                                        std::to_string(ctx.abilities.max_input_tokens) +
                                        " one input may have. Shorten it or set truncate_prompt_tokens.",
                                    param);
}

void Truncate(std::vector<TokenId>& ids, std::optional<int64_t> truncate) {
  if (truncate && static_cast<int64_t>(ids.size()) > *truncate) {
    ids.erase(ids.begin(), ids.end() - *truncate);
  }
}

std::vector<TokenId> PairTokens(const ServeContext& ctx, const std::string& query, const std::string& document) {
  const Tokenizer& tok = *ctx.tokenizer;
  std::vector<TokenId> ids;
  if (ctx.abilities.classifier) {
    // [CLS] query [SEP] document [SEP] (token type 0 throughout, as llama.cpp).
    ids = tok.Encode(query, /*add_special=*/true, /*parse_special=*/false);
    std::vector<TokenId> doc = tok.Encode(document, /*add_special=*/false, /*parse_special=*/false);
    ids.insert(ids.end(), doc.begin(), doc.end());
    if (tok.sep() >= 0) ids.push_back(tok.sep());
    return ids;
  }
  const std::string text = std::string(kRerankSystem) + "<Instruct>: " + kRerankInstruct + "\n<Query>: " + query +
                           "\n<Document>: " + document + kRerankSuffix;
  return tok.Encode(text, /*add_special=*/true, /*parse_special=*/true);
}

}  // namespace

api::ApiResult<std::vector<TokenId>> InputTokens(const ServeContext& ctx, const api::CompletionPrompt& input,
                                                 std::optional<int64_t> truncate, const std::string& param) {
  std::vector<TokenId> ids;
  if (input.is_tokens) {
    if (auto e = api::CheckTokenIds(input.tokens, ctx.tokenizer->vocab_size(), param)) return *e;
    ids = input.tokens;
  } else {
    ids = ctx.tokenizer->Encode(input.text, /*add_special=*/true, /*parse_special=*/false);
  }
  Truncate(ids, truncate);
  if (ids.empty()) return api::InvalidValue(param, "Invalid '" + param + "': it encodes to no tokens.");
  if (static_cast<int64_t>(ids.size()) > ctx.abilities.max_input_tokens) return TooLong(ctx, ids.size(), param);
  return ids;
}

api::ApiResult<EngineRequest> ScoreRequestFor(const ServeContext& ctx, const std::string& query,
                                              const std::vector<std::string>& documents,
                                              std::optional<int64_t> truncate, int32_t top_n,
                                              const std::string& documents_param, const std::string& id) {
  std::vector<std::vector<TokenId>> all;
  all.reserve(documents.size());
  for (size_t i = 0; i < documents.size(); ++i) {
    all.push_back(PairTokens(ctx, query, documents[i]));
    Truncate(all.back(), truncate);
    const std::string param = documents_param + "[" + std::to_string(i) + "]";
    if (static_cast<int64_t>(all.back().size()) > ctx.abilities.max_input_tokens) {
      return TooLong(ctx, all.back().size(), param);
    }
  }
  // The longest common prefix, leaving every candidate at least one token
  // of its own (its last position is where it is scored).
  size_t common = all.front().size() - 1;
  for (const auto& ids : all) {
    common = std::min(common, ids.size() - 1);
    size_t k = 0;
    while (k < common && ids[k] == all.front()[k]) ++k;
    common = k;
  }
  EngineRequest r;
  r.id = id;
  r.max_tokens = 0;
  r.prompt.assign(all.front().begin(), all.front().begin() + static_cast<std::ptrdiff_t>(common));
  PrefillTask t;
  t.kind = PrefillTask::Kind::kScore;
  t.pooling = ctx.abilities.classifier ? PoolingType::kRank : PoolingType::kLast;
  if (!ctx.abilities.classifier) {
    t.score_yes = ctx.abilities.yes;
    t.score_no = ctx.abilities.no;
  }
  t.top_n = top_n;
  for (auto& ids : all) t.suffixes.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(common), ids.end());
  r.n = static_cast<int32_t>(t.suffixes.size());
  r.prefill = std::move(t);
  return r;
}

double RelevanceScore(const ServeContext& ctx, float engine_score) {
  if (!ctx.abilities.classifier) return engine_score;
  return 1.0 / (1.0 + std::exp(-static_cast<double>(engine_score)));
}

}  // namespace pagoda::server
