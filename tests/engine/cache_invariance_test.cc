// A request's outputs never depend on what the KV cache held or what else the
// engine was doing: for every KV dtype, the same request (greedy, or sampled
// with a seed) gives bit-identical tokens when its prefix is cold, fully
// cached, partly cached (a shared head with another request's tail), when it
// is preempted and recomputed, and inside a batch of 16 mixed requests with
// small, block-misaligned prefill chunks. The reference is the request alone
// on a fresh engine with prefix caching off; greedy references are also
// checked against Generator (the contiguous cache, another code path).
// Models: stories260K and the synthetic qwen2 (GQA, biases), real F32
// checkpoints; a random-weight GQA llama in Q4_0 (the quantized kernels);
// and an F32 checkpoint with --decode-weights q4_0 (generated positions go
// through the decode copy, also when recomputed after preemption).
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/generator.h"
#include "model/paged_kv_cache.h"
#include "model/random_model.h"
#include "support/loaded_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

constexpr int kRequests = 16;
constexpr int32_t kCtx = 256;

// 16 requests: eight share a 37-token head (a system prompt, not a whole
// number of 16-position blocks) with different tails, eight are unrelated;
// prompts of 3 to ~110 tokens, 20 to 44 tokens generated (no end-of-text
// stops: the engine has no is_eog, so batches stay mixed to the end). Odd requests are
// sampled (temperature 0.9, top-k 40, their own seed), even ones greedy.
std::vector<EngineRequest> Requests(int64_t n_vocab, TokenId bos) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<TokenId> tok(3, static_cast<TokenId>(n_vocab) - 1);
  std::vector<TokenId> head = {bos};
  while (head.size() < 37) head.push_back(tok(rng));
  std::vector<EngineRequest> reqs;
  for (int i = 0; i < kRequests; ++i) {
    EngineRequest r;
    r.id = "r" + std::to_string(i);
    r.prompt = i < 8 ? head : std::vector<TokenId>{bos};
    const int extra = 2 + (i * 13) % 70;
    for (int j = 0; j < extra; ++j) r.prompt.push_back(tok(rng));
    r.max_tokens = 20 + (i * 7) % 25;
    if (i % 2 == 1) {
      r.sampling.temperature = 0.9f;
      r.sampling.top_k = 40;
      r.sampling.seed = 1000 + i;
    } else {
      r.sampling.temperature = 0;
    }
    reqs.push_back(std::move(r));
  }
  return reqs;
}

struct RunResult {
  std::vector<std::vector<TokenId>> tokens;  // per request, choice 0
  std::vector<int32_t> cached;               // prompt tokens served from the prefix cache
};

// Submits `reqs` together to `engine` (not started) and steps until idle.
RunResult RunTogether(Engine& engine, const std::vector<EngineRequest>& reqs) {
  std::vector<RequestHandle> hs;
  for (const EngineRequest& r : reqs) {
    auto h = engine.Submit(r);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) return {};
    hs.push_back(*h);
  }
  while (engine.Step()) {
  }
  RunResult out;
  for (auto& h : hs) {
    out.tokens.emplace_back();
    out.cached.push_back(-1);
    while (auto e = h->TryPop()) {
      if (e->has_token()) out.tokens.back().push_back(e->token);
      if (e->is_final()) {
        EXPECT_TRUE(e->error.ok()) << e->error.ToString();
        out.cached.back() = e->usage.tokens_cached;
      }
    }
    EXPECT_GE(out.cached.back(), 0) << "no final event";
  }
  return out;
}

// "random_q4_0" / "random_decode_q4_0": a random-weight llama written at
// test time (8 heads, 2 KV heads of 32; Q4_0 matrices and LM head, or F32
// with Q4_0 decode copies); anything else: a file of ../shared/testdata.
class CacheInvarianceTest : public ::testing::TestWithParam<std::tuple<const char*, KvType>> {
 protected:
  void SetUp() override {
    const auto& [model, type] = GetParam();
    const std::string name = model;
    if (name.rfind("random", 0) == 0) {
      RandomModelSpec spec;
      spec.n_embd = 256;
      spec.n_head = 8;
      spec.n_head_kv = 2;
      spec.n_ff = 512;
      spec.n_vocab = 320;
      spec.seed = 5;
      ModelOptions options;
      if (name == "random_q4_0") {
        spec.weight_type = DType::kQ4_0;
        spec.output_type = DType::kQ4_0;
      } else {
        spec.weight_type = DType::kF32;
        options.decode_weights = DType::kQ4_0;
      }
      const std::string path = (testing::TempDirForProcess() / ("pagoda_cacheinv_" + name + ".gguf")).string();
      ASSERT_TRUE(WriteRandomModel(spec, path).ok());
      l_ = testing::LoadModelAndTokenizer(path, 2, options);
      std::filesystem::remove(path);
    } else {
      if (!testing::HaveTestData(model)) GTEST_SKIP() << "test data " << model << " is absent";
      l_ = testing::LoadModelAndTokenizer(testing::TestDataPath(model), 2);
    }
    ASSERT_TRUE(l_.model);
    type_ = type;
    reqs_ = Requests(l_.model->n_vocab(), l_.tokenizer->bos() >= 0 ? l_.tokenizer->bos() : 1);
  }

  EngineOptions Options(bool prefix_caching) const {
    EngineOptions o;
    o.n_ctx = kCtx;
    o.max_running = kRequests;
    o.max_batch_tokens = 512;
    o.kv_type = type_;
    o.prefix_caching = prefix_caching;
    return o;
  }

  std::unique_ptr<Engine> MakeEngine(const EngineOptions& o) const {
    auto e = Engine::Create(*l_.model, o);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(e).value() : nullptr;
  }

  // Each request alone, on a fresh engine without prefix caching.
  std::vector<std::vector<TokenId>> References() const {
    std::vector<std::vector<TokenId>> want;
    for (const EngineRequest& r : reqs_) {
      auto engine = MakeEngine(Options(false));
      want.push_back(RunTogether(*engine, {r}).tokens.at(0));
      EXPECT_EQ(static_cast<int32_t>(want.back().size()), r.max_tokens) << r.id;
    }
    return want;
  }

  void ExpectSame(const RunResult& got, const std::vector<std::vector<TokenId>>& want, const std::string& what) const {
    ASSERT_EQ(got.tokens.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got.tokens[i], want[i]) << what << ", request " << i;
  }

  testing::LoadedModel l_;
  KvType type_ = KvType::kF16;
  std::vector<EngineRequest> reqs_;
};

TEST_P(CacheInvarianceTest, GreedyReferencesMatchGenerator) {
  const auto want = References();
  auto gen = Generator::Create(*l_.model, kCtx, nullptr, type_);
  ASSERT_TRUE(gen.ok()) << gen.status().ToString();
  for (size_t i = 0; i < reqs_.size(); i += 2) {  // the greedy ones
    GenerateRequest g;
    g.prompt = reqs_[i].prompt;
    g.max_tokens = reqs_[i].max_tokens;
    g.sampling.temperature = 0;
    auto res = (*gen)->Generate(g, nullptr);
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    EXPECT_EQ(res->tokens, want[i]) << "request " << i;
  }
}

// Warm: the same request again adopts its own prompt's blocks. Partly warm:
// a request whose head another request (different tail) left in the cache.
TEST_P(CacheInvarianceTest, WarmAndPartlyWarmPrefixesGiveTheColdAnswer) {
  const auto want = References();
  for (size_t i = 0; i < reqs_.size(); ++i) {
    auto engine = MakeEngine(Options(true));
    const RunResult cold = RunTogether(*engine, {reqs_[i]});
    EXPECT_EQ(cold.cached[0], 0);
    EXPECT_EQ(cold.tokens[0], want[i]) << "cold, request " << i;
    const RunResult warm = RunTogether(*engine, {reqs_[i]});
    EXPECT_EQ(warm.cached[0], static_cast<int32_t>((reqs_[i].prompt.size() - 1) / 16 * 16)) << i;
    EXPECT_EQ(warm.tokens[0], want[i]) << "warm, request " << i;
  }
  for (size_t i = 0; i < 8; ++i) {  // the shared-head requests
    auto engine = MakeEngine(Options(true));
    RunTogether(*engine, {reqs_[(i + 1) % 8]});
    const RunResult partly = RunTogether(*engine, {reqs_[i]});
    EXPECT_EQ(partly.cached[0], 32) << "the head's two whole blocks, request " << i;
    EXPECT_EQ(partly.tokens[0], want[i]) << "partly warm, request " << i;
  }
}

// All 16 at once, prefills chunked at a budget that is not a multiple of the
// block size (so a block is written across steps), decodes mixed in; then
// again with every prompt cached. With and without prefix caching.
TEST_P(CacheInvarianceTest, BatchOfSixteenMixedRequestsGivesTheAloneAnswers) {
  const auto want = References();
  for (bool prefix : {false, true}) {
    EngineOptions o = Options(prefix);
    o.max_batch_tokens = 27;
    auto engine = MakeEngine(o);
    const RunResult first = RunTogether(*engine, reqs_);
    ExpectSame(first, want, prefix ? "batch, prefix cache on" : "batch, prefix cache off");
    const RunResult second = RunTogether(*engine, reqs_);
    ExpectSame(second, want, prefix ? "batch again, prompts cached" : "batch again");
    int32_t cached = 0;
    for (int32_t c : second.cached) cached += c;
    if (prefix) {
      EXPECT_GT(cached, 0);
    } else {
      EXPECT_EQ(cached, 0);
    }
    EXPECT_GT(engine->stats().iteration_tokens.count, 0);
    EXPECT_EQ(engine->stats().kv_usage, 0.0);
  }
}

// A KV pool far too small for 16 running requests: sequences are preempted
// and recompute their prompt and generated tokens (in prefill chunks, where
// they were first computed one decode step at a time), re-adopting cached
// blocks where prefix caching is on.
TEST_P(CacheInvarianceTest, PreemptedAndRecomputedRequestsGiveTheAloneAnswers) {
  const auto want = References();
  for (bool prefix : {false, true}) {
    EngineOptions o = Options(prefix);
    o.max_batch_tokens = 40;
    o.kv_memory_bytes = 40 * PagedKvCache::BlockBytes(l_.model->kv_cache_spec(), type_, o.block_size);
    auto engine = MakeEngine(o);
    const RunResult got = RunTogether(*engine, reqs_);
    ExpectSame(got, want, prefix ? "preempted, prefix cache on" : "preempted, prefix cache off");
    EXPECT_GT(engine->stats().preemptions_total, 0) << "the pool should have forced preemptions";
    EXPECT_EQ(engine->stats().kv_usage, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    ModelsAndTypes, CacheInvarianceTest,
    ::testing::Combine(::testing::Values("stories260K.gguf", "synthetic/qwen2.gguf", "random_q4_0", "random_decode_q4_0"),
                       ::testing::Values(KvType::kF16, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8)),
    [](const auto& info) {
      std::string m = std::get<0>(info.param);
      m = m.substr(m.rfind('/') + 1);
      m = m.substr(0, m.find('.'));
      return m + "_" + kernels::KvTypeName(std::get<1>(info.param));
    });

}  // namespace
}  // namespace pagoda
