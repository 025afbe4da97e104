// Prefill-only requests on the real stories260K model (EngineRequest::prefill):
// embeddings pooled from the final hidden states agree with a direct forward
// of the prompt alone, whatever else runs in the same steps (chunked prompts,
// generation, other embeddings), bitwise; candidates sharing a prefix compute
// it once and leave ranked, with only the top_n carrying scores; max_tokens 0
// reports the prompt's logprobs and generates nothing.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "support/loaded_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

constexpr const char* kModel = "stories260K.gguf";

std::vector<TokenId> RandomPrompt(std::mt19937& rng, int64_t n_vocab, int n) {
  std::uniform_int_distribution<TokenId> tok(3, static_cast<TokenId>(n_vocab) - 1);
  std::vector<TokenId> p = {1};
  while (static_cast<int>(p.size()) < n) p.push_back(tok(rng));
  return p;
}

// The final hidden rows of `prompt`, computed alone in one forward: [n, n_embd].
std::vector<float> HiddenRows(Model& model, const std::vector<TokenId>& prompt) {
  PagedKvCacheOptions ko;
  ko.n_seq_max = 1;
  ko.n_ctx = 256;
  ko.block_size = 16;
  ko.memory_bytes = PagedKvCache::BlockBytes(model.kv_cache_spec(), KvType::kF16, 16) * 16;
  auto kv = PagedKvCache::Create(model.kv_cache_spec(), ko);
  EXPECT_TRUE(kv.ok());
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.Add(prompt[i], static_cast<int32_t>(i), 0, false, false, true);
  std::vector<float> hidden(prompt.size() * static_cast<size_t>(model.config().n_embd));
  Status st = model.Run(b, **kv, ForwardOutputs{{}, hidden});
  EXPECT_TRUE(st.ok()) << st.ToString();
  return hidden;
}

std::vector<float> Pool(const std::vector<float>& rows, int64_t n_embd, PoolingType pooling) {
  const int64_t n = static_cast<int64_t>(rows.size()) / n_embd;
  std::vector<double> acc(static_cast<size_t>(n_embd), 0.0);
  if (pooling == PoolingType::kMean) {
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < n_embd; ++i) acc[i] += rows[t * n_embd + i];
    }
    for (double& v : acc) v /= static_cast<double>(n);
  } else {
    const int64_t t = pooling == PoolingType::kCls ? 0 : n - 1;
    for (int64_t i = 0; i < n_embd; ++i) acc[i] = rows[t * n_embd + i];
  }
  double norm = 0;
  for (double v : acc) norm += static_cast<double>(static_cast<float>(v)) * static_cast<float>(v);
  norm = std::sqrt(norm);
  std::vector<float> out;
  for (double v : acc) out.push_back(static_cast<float>(static_cast<float>(v) / norm));
  return out;
}

EngineRequest Embed(std::vector<TokenId> prompt, PoolingType pooling, const std::string& id) {
  EngineRequest r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_tokens = 0;
  PrefillTask t;
  t.kind = PrefillTask::Kind::kEmbed;
  t.pooling = pooling;
  r.prefill = t;
  return r;
}

std::vector<EngineEvent> Finals(RequestChannel& h) {
  std::vector<EngineEvent> out;
  while (auto e = h.Pop()) {
    if (e->is_final()) out.push_back(std::move(*e));
  }
  return out;
}

class PrefillTest : public ::testing::TestWithParam<PoolingType> {};

TEST_P(PrefillTest, EmbeddingsMatchAForwardAloneInsideMixedTraffic) {
  PAGODA_REQUIRE_TESTDATA(kModel);
  testing::LoadedModel l = testing::LoadModelAndTokenizer(testing::TestDataPath(kModel), 1);
  ASSERT_TRUE(l.model);
  const PoolingType pooling = GetParam();
  const int64_t n_embd = l.model->config().n_embd;
  std::mt19937 rng(11);
  std::vector<std::vector<TokenId>> prompts;
  for (int i = 0; i < 24; ++i) prompts.push_back(RandomPrompt(rng, l.model->n_vocab(), 5 + (i * 13) % 90));
  // Half share a head, so the last-token pooling adopts cached blocks.
  for (int i = 1; i < 24; i += 2) std::copy(prompts[0].begin(), prompts[0].begin() + 4, prompts[i].begin());

  // The references first: the model serves one thread at a time.
  std::vector<std::vector<float>> want;
  for (const auto& p : prompts) want.push_back(Pool(HiddenRows(*l.model, p), n_embd, pooling));

  EngineOptions o;
  o.n_ctx = 256;
  o.max_running = 12;
  o.max_waiting = 64;
  o.max_batch_tokens = 48;  // chunked prompts mixed with decodes
  o.is_eog = [&](TokenId id) { return l.tokenizer->IsEog(id); };
  auto engine = Engine::Create(*l.model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  (*engine)->Start();
  std::vector<RequestHandle> embeds, gens;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto h = (*engine)->Submit(Embed(prompts[i], pooling, "e" + std::to_string(i)));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    embeds.push_back(*h);
    if (i % 3 == 0) {  // generation traffic in the same steps
      EngineRequest g;
      g.id = "g" + std::to_string(i);
      g.prompt = RandomPrompt(rng, l.model->n_vocab(), 30);
      g.max_tokens = 20;
      g.sampling.temperature = 0;
      auto gh = (*engine)->Submit(std::move(g));
      ASSERT_TRUE(gh.ok());
      gens.push_back(*gh);
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<EngineEvent> f = Finals(*embeds[i]);
    ASSERT_EQ(f.size(), 1u);
    ASSERT_EQ(f[0].finish, FinishReason::kStop) << f[0].error.ToString();
    EXPECT_EQ(f[0].usage.tokens_completion, 0);
    // Bitwise for last/CLS (the same row); the mean sums the same rows in
    // the same order, in double.
    EXPECT_EQ(f[0].embedding, want[i]) << "prompt " << i << " (" << prompts[i].size() << " tokens)";
  }
  for (auto& g : gens) {
    auto f = Finals(*g);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].finish, FinishReason::kError);
  }
  (*engine)->Stop();
}

INSTANTIATE_TEST_SUITE_P(Pooling, PrefillTest,
                         ::testing::Values(PoolingType::kLast, PoolingType::kMean, PoolingType::kCls),
                         [](const auto& info) { return std::string(PoolingTypeName(info.param)); });

// A yes/no score request over candidates sharing a prefix: the same scores as
// each pair alone, the prefix computed once (the candidates adopt its
// blocks), the ranking best first, and top_n keeps only the winners' scores.
TEST(PrefillRankTest, CandidatesShareThePrefixAndLeaveRanked) {
  PAGODA_REQUIRE_TESTDATA(kModel);
  testing::LoadedModel l = testing::LoadModelAndTokenizer(testing::TestDataPath(kModel), 1);
  ASSERT_TRUE(l.model);
  std::mt19937 rng(5);
  const std::vector<TokenId> prefix = RandomPrompt(rng, l.model->n_vocab(), 70);
  std::vector<std::vector<TokenId>> suffixes;
  for (int i = 0; i < 12; ++i) {
    std::vector<TokenId> s = RandomPrompt(rng, l.model->n_vocab(), 3 + i % 7);
    s.erase(s.begin());  // no BOS mid-prompt
    suffixes.push_back(s);
  }
  const TokenId yes = 100, no = 200;
  EngineOptions o;
  o.n_ctx = 256;
  o.max_running = 6;
  o.max_waiting = 64;
  o.max_batch_tokens = 64;
  o.block_size = 16;
  auto engine = Engine::Create(*l.model, o);
  ASSERT_TRUE(engine.ok());
  (*engine)->Start();
  auto score_request = [&](std::vector<TokenId> prompt, std::vector<std::vector<TokenId>> cands, int top_n) {
    EngineRequest r;
    r.id = "s";
    r.prompt = std::move(prompt);
    r.max_tokens = 0;
    PrefillTask t;
    t.kind = PrefillTask::Kind::kScore;
    t.score_yes = yes;
    t.score_no = no;
    t.top_n = top_n;
    t.suffixes = std::move(cands);
    r.n = static_cast<int32_t>(t.suffixes.size());
    r.prefill = std::move(t);
    return r;
  };
  // Each pair alone first (and on a fresh cache: the salts differ).
  std::vector<float> alone;
  for (size_t i = 0; i < suffixes.size(); ++i) {
    EngineRequest r = score_request(prefix, {suffixes[i]}, 0);
    r.cache_salt = "alone" + std::to_string(i);
    auto h = (*engine)->Submit(std::move(r));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    auto f = Finals(**h);
    ASSERT_EQ(f.size(), 1u);
    ASSERT_TRUE(f[0].has_score) << f[0].error.ToString();
    EXPECT_EQ(f[0].rank, 0);
    EXPECT_GT(f[0].score, 0.0f);
    EXPECT_LT(f[0].score, 1.0f);
    alone.push_back(f[0].score);
  }
  constexpr int kTopN = 4;
  EngineRequest r = score_request(prefix, suffixes, kTopN);
  r.cache_salt = "together";
  auto h = (*engine)->Submit(std::move(r));
  ASSERT_TRUE(h.ok());
  auto f = Finals(**h);
  ASSERT_EQ(f.size(), suffixes.size());
  // Leaves in rank order.
  std::vector<size_t> order(suffixes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return alone[a] > alone[b]; });
  int64_t cached = 0;
  for (size_t k = 0; k < f.size(); ++k) {
    EXPECT_EQ(f[k].rank, static_cast<int32_t>(k));
    EXPECT_EQ(static_cast<size_t>(f[k].index), order[k]) << "rank " << k;
    EXPECT_EQ(f[k].has_score, static_cast<int>(k) < kTopN);
    if (f[k].has_score) EXPECT_EQ(f[k].score, alone[static_cast<size_t>(f[k].index)]);
    cached += f[k].usage.tokens_cached;
  }
  // All but the first candidate adopt the prefix's 4 full blocks (64 tokens).
  EXPECT_EQ(cached, 64 * static_cast<int64_t>(suffixes.size() - 1));
  (*engine)->Stop();
}

TEST(PrefillRankTest, MaxTokensZeroReportsThePromptOnly) {
  PAGODA_REQUIRE_TESTDATA(kModel);
  testing::LoadedModel l = testing::LoadModelAndTokenizer(testing::TestDataPath(kModel), 1);
  ASSERT_TRUE(l.model);
  EngineOptions o;
  o.n_ctx = 128;
  auto engine = Engine::Create(*l.model, o);
  ASSERT_TRUE(engine.ok());
  (*engine)->Start();
  std::mt19937 rng(3);
  EngineRequest r;
  r.id = "p";
  r.prompt = RandomPrompt(rng, l.model->n_vocab(), 20);
  r.max_tokens = 0;
  r.prompt_logprobs = true;
  auto h = (*engine)->Submit(std::move(r));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  int prompt_events = 0, finals = 0;
  while (auto e = (*h)->Pop()) {
    if (e->prompt) {
      ++prompt_events;
    } else {
      ASSERT_TRUE(e->is_final());
      EXPECT_EQ(e->finish, FinishReason::kLength);
      EXPECT_FALSE(e->has_token());
      EXPECT_EQ(e->usage.tokens_completion, 0);
      ++finals;
    }
  }
  EXPECT_EQ(prompt_events, 19);
  EXPECT_EQ(finals, 1);
  (*engine)->Stop();
}

TEST(PrefillRankTest, BadPrefillRequestsAreRefused) {
  PAGODA_REQUIRE_TESTDATA(kModel);
  testing::LoadedModel l = testing::LoadModelAndTokenizer(testing::TestDataPath(kModel), 1);
  ASSERT_TRUE(l.model);
  EngineOptions o;
  o.n_ctx = 64;
  auto engine = Engine::Create(*l.model, o);
  ASSERT_TRUE(engine.ok());
  EngineRequest r = Embed({1, 5, 6}, PoolingType::kLast, "bad");
  r.prefill->dimensions = 65;  // n_embd is 64
  EXPECT_FALSE((*engine)->Submit(r).ok());
  r = Embed({1, 5, 6}, PoolingType::kNone, "bad");
  EXPECT_FALSE((*engine)->Submit(r).ok());
  r = Embed(std::vector<TokenId>(70, 5), PoolingType::kLast, "long");
  EXPECT_FALSE((*engine)->Submit(r).ok());
  r = Embed({1, 5}, PoolingType::kLast, "score");
  r.prefill->kind = PrefillTask::Kind::kScore;  // no classifier, no yes/no tokens
  EXPECT_FALSE((*engine)->Submit(r).ok());
  r.prefill->suffixes = {{3}, {4}};
  r.prefill->score_yes = 3;
  r.prefill->score_no = 4;
  r.n = 1;  // must equal the candidates
  EXPECT_FALSE((*engine)->Submit(r).ok());
}

}  // namespace
}  // namespace pagoda
