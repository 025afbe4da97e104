// The engine on the real stories260K model: concurrent greedy requests,
// batched with chunked prefill (and, with prefix caching on, adopted
// blocks), must each produce exactly what Generator produces for the prompt
// alone.
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/generator.h"
#include "gguf/gguf_file.h"
#include "support/loaded_model.h"
#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

constexpr const char* kModel = "stories260K.gguf";

testing::LoadedModel Load() { return testing::LoadModelAndTokenizer(testing::TestDataPath(kModel), 1); }

// 16 prompts of 5 to 80 tokens; half share a 40-token head (prefix hits).
std::vector<std::vector<TokenId>> Prompts(int64_t n_vocab) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<TokenId> tok(3, static_cast<TokenId>(n_vocab) - 1);
  std::vector<TokenId> head = {1};
  while (head.size() < 40) head.push_back(tok(rng));
  std::vector<std::vector<TokenId>> prompts;
  for (int i = 0; i < 16; ++i) {
    std::vector<TokenId> p = i % 2 ? head : std::vector<TokenId>{1};
    const int extra = 4 + (i * 11) % 40;
    for (int j = 0; j < extra; ++j) p.push_back(tok(rng));
    prompts.push_back(std::move(p));
  }
  return prompts;
}

class BatchInvarianceTest : public ::testing::TestWithParam<bool> {};

TEST_P(BatchInvarianceTest, ConcurrentGreedyRequestsMatchGenerator) {
  PAGODA_REQUIRE_TESTDATA(kModel);
  testing::LoadedModel l = Load();
  ASSERT_TRUE(l.model);
  auto is_eog = [&](TokenId id) { return l.tokenizer->IsEog(id); };
  const auto prompts = Prompts(l.model->n_vocab());
  constexpr int kMaxTokens = 24;

  auto gen = Generator::Create(*l.model, 256, is_eog);
  ASSERT_TRUE(gen.ok());
  std::vector<std::vector<TokenId>> want;
  for (const auto& p : prompts) {
    GenerateRequest r;
    r.prompt = p;
    r.max_tokens = kMaxTokens;
    r.sampling.temperature = 0;
    auto res = (*gen)->Generate(r, nullptr);
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    want.push_back(res->tokens);
  }

  EngineOptions o;
  o.n_ctx = 256;
  o.max_running = 16;
  o.max_batch_tokens = 64;  // forces chunked prompts mixed with decodes
  o.prefix_caching = GetParam();
  o.is_eog = is_eog;
  auto engine = Engine::Create(*l.model, o);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  (*engine)->Start();
  std::vector<RequestHandle> hs;
  for (size_t i = 0; i < prompts.size(); ++i) {
    EngineRequest r;
    r.id = "r" + std::to_string(i);
    r.prompt = prompts[i];
    r.max_tokens = kMaxTokens;
    r.sampling.temperature = 0;
    auto h = (*engine)->Submit(std::move(r));
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    hs.push_back(*h);
  }
  int64_t cached = 0;
  for (size_t i = 0; i < hs.size(); ++i) {
    std::vector<TokenId> got;
    while (auto e = hs[i]->Pop()) {
      if (e->has_token()) got.push_back(e->token);
      if (e->is_final()) {
        EXPECT_TRUE(e->error.ok()) << e->error.ToString();
        cached += e->usage.tokens_cached;
      }
    }
    EXPECT_EQ(got, want[i]) << "request " << i;
  }
  (*engine)->Stop();
  if (GetParam()) {
    EXPECT_GT(cached, 0);  // the shared 40-token head is adopted by later requests
  } else {
    EXPECT_EQ(cached, 0);
  }
  EXPECT_EQ((*engine)->stats().kv_usage, 0.0);
}

INSTANTIATE_TEST_SUITE_P(PrefixCaching, BatchInvarianceTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "On" : "Off"; });

TEST(EngineModelTest, RepeatedPromptReportsCachedTokens) {
  PAGODA_REQUIRE_TESTDATA(kModel);
  testing::LoadedModel l = Load();
  ASSERT_TRUE(l.model);
  EngineOptions o;
  o.n_ctx = 256;
  o.max_running = 4;
  auto engine = Engine::Create(*l.model, o);
  ASSERT_TRUE(engine.ok());
  const std::vector<TokenId> prompt = l.tokenizer->Encode("Once upon a time, there was a little girl named Lily. "
                                                          "She loved to play outside in the sun.", true, false);
  ASSERT_GT(prompt.size(), 17u);
  std::vector<Usage> usage;
  std::vector<std::vector<TokenId>> tokens;
  for (int round = 0; round < 2; ++round) {
    EngineRequest r;
    r.id = "rep";
    r.prompt = prompt;
    r.max_tokens = 8;
    r.sampling.temperature = 0;
    auto h = (*engine)->Submit(r);
    ASSERT_TRUE(h.ok());
    while ((*engine)->Step()) {
    }
    tokens.emplace_back();
    while (auto e = (*h)->TryPop()) {
      if (e->has_token()) tokens.back().push_back(e->token);
      if (e->is_final()) usage.push_back(e->usage);
    }
  }
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].tokens_cached, 0);
  EXPECT_GT(usage[1].tokens_cached, 0);
  EXPECT_EQ(usage[1].tokens_cached, static_cast<int32_t>((prompt.size() - 1) / 16 * 16));
  EXPECT_EQ(tokens[0], tokens[1]);
  EXPECT_GT((*engine)->stats().prefix_cache_hits, 0);
}

}  // namespace
}  // namespace pagoda
