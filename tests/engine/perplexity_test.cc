// Accuracy of the KV cache types (docs/KV_CACHE.md): perplexity and
// teacher-forced top-1 agreement of bf16 / fp8_e4m3 / int8 KV against f16 KV
// on stories260K over tests/data/tiny_stories.txt and on random-weight models
// over text they sampled themselves; plus ComputePerplexity against a one-pass
// prefill evaluation.
#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/random_model.h"
#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {
namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct KvAccuracy {
  double ppl[5] = {};        // by KvType
  double agreement[5] = {};  // vs f16, by KvType
};

// Perplexity under every type and top-1 agreement with f16 KV; the numbers
// go to stdout for docs/PERFORMANCE.md.
KvAccuracy Measure(Model& model, const std::vector<TokenId>& tokens, int32_t n_ctx, const char* name) {
  KvAccuracy acc;
  std::vector<std::vector<TokenId>> prompts;
  for (size_t w = 0; (w + 1) * n_ctx <= tokens.size(); ++w) {
    prompts.emplace_back(tokens.begin() + w * n_ctx, tokens.begin() + w * n_ctx + n_ctx / 2);
  }
  for (KvType t : {KvType::kF16, KvType::kF32, KvType::kBf16, KvType::kFp8E4M3, KvType::kInt8}) {  // f16 first: the base
    PerplexityOptions o;
    o.n_ctx = n_ctx;
    o.kv_type = t;
    auto r = ComputePerplexity(model, tokens, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return acc;
    acc.ppl[static_cast<int>(t)] = r->perplexity;
    auto a = CompareTopTokens(EvalConfig{&model, KvType::kF16}, EvalConfig{&model, t}, prompts, n_ctx - n_ctx / 2);
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    if (!a.ok()) return acc;
    acc.agreement[static_cast<int>(t)] = a->fraction();
    std::printf("[kv-accuracy] %s: %s KV perplexity %.4f (%+.3f%% vs f16 KV) over %lld tokens, top-1 agreement "
                "with f16 KV %.4f over %lld positions\n",
                name, kernels::KvTypeName(t), r->perplexity,
                100.0 * (r->perplexity / acc.ppl[static_cast<int>(KvType::kF16)] - 1.0),
                static_cast<long long>(r->n_scored), a->fraction(), static_cast<long long>(a->n_positions));
  }
  return acc;
}

// Bounds per type: relative perplexity change against f16 KV and the least
// top-1 agreement with it.
struct Bound {
  KvType type;
  double max_ppl_change;
  double min_agreement;
};

void ExpectWithinBounds(const KvAccuracy& acc, std::initializer_list<Bound> bounds) {
  const double f16 = acc.ppl[static_cast<int>(KvType::kF16)];
  for (const Bound& b : bounds) {
    SCOPED_TRACE(kernels::KvTypeName(b.type));
    EXPECT_LT(std::abs(acc.ppl[static_cast<int>(b.type)] / f16 - 1.0), b.max_ppl_change);
    EXPECT_GE(acc.agreement[static_cast<int>(b.type)], b.min_agreement);
  }
  EXPECT_EQ(acc.agreement[static_cast<int>(KvType::kF16)], 1.0);  // same configuration: identical
}

TEST(KvDtypeAccuracyTest, Stories260K) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  ThreadPool pool(2);
  auto file = GgufFile::Open(pagoda::testing::TestDataPath("stories260K.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::shared_ptr<const GgufFile> shared = std::move(*file);
  auto tok = Tokenizer::FromMetadata(shared->metadata());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  auto model = LoadModel(shared, pool);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::string text = ReadText(std::string(PAGODA_SOURCE_DIR) + "/tests/data/tiny_stories.txt");
  ASSERT_GT(text.size(), 4000u);
  const std::vector<TokenId> tokens = (*tok)->Encode(text, /*add_special=*/true, /*parse_special=*/false);
  ASSERT_GE(tokens.size(), 1024u);
  const KvAccuracy acc = Measure(**model, tokens, 256, "stories260K");
  // Every scored token is a decode step reading the quantized cache of all
  // positions (perplexity.h), and the context's prefill reads its own
  // positions quantized too, as the server does. bf16 meets the bound
  // (< 1%, >= 99%); FP8's 3 mantissa bits do not on this model's 8-wide heads
  // (measured +2.5%, 95.2%; docs/PERFORMANCE.md), int8 with per-row scales
  // is within 0.1% (97.5% agreement): the bounds below sit just outside the
  // measured values so a regression in the scheme or the kernel shows.
  ExpectWithinBounds(acc, {{KvType::kBf16, 0.01, 0.99}, {KvType::kFp8E4M3, 0.03, 0.945}, {KvType::kInt8, 0.005, 0.97}});
  // A real small model on in-domain text: well below the uniform 512.
  EXPECT_LT(acc.ppl[static_cast<int>(KvType::kF16)], 50.0);
}

struct RandomCase {
  const char* name;
  int n_head, n_head_kv, head_dim;
};

class KvDtypeRandomModelTest : public ::testing::TestWithParam<RandomCase> {};

// The text is the f16 model's own sample (temperature 1), so its perplexity
// is that of the model's distribution rather than of unrelated tokens.
TEST_P(KvDtypeRandomModelTest, FollowsF16) {
  const RandomCase c = GetParam();
  RandomModelSpec spec;
  spec.n_embd = 256;
  spec.n_layer = 2;
  spec.n_head = c.n_head;
  spec.n_head_kv = c.n_head_kv;
  spec.head_dim = c.head_dim;
  spec.n_ff = 512;
  spec.n_vocab = 320;
  spec.seed = 11;
  const std::string path =
      (::pagoda::testing::TempDirForProcess() / (std::string("pagoda_kvacc_") + c.name + ".gguf")).string();
  ASSERT_TRUE(WriteRandomModel(spec, path).ok());
  ThreadPool pool(2);
  auto model = LoadModel(path, pool);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Model& m = **model;

  // Sampled window by window from position 0, as the windows are evaluated.
  const int32_t n_ctx = 256, n_windows = 4;
  std::vector<TokenId> tokens;
  std::mt19937 rng(3);
  for (int w = 0; w < n_windows; ++w) {
    auto kv = ContiguousKvCache::Create(m.kv_cache_spec(), 1, n_ctx, KvType::kF16);
    ASSERT_TRUE(kv.ok());
    std::vector<float> logits(m.n_vocab());
    Batch b;
    tokens.push_back(1);
    for (int32_t i = 0; i + 1 < n_ctx; ++i) {
      b.Clear();
      b.Add(tokens.back(), i, 0, true);
      ASSERT_TRUE(m.Forward(b, **kv, logits).ok());
      std::vector<double> p(logits.size());
      const float mx = *std::max_element(logits.begin(), logits.end());
      for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp(static_cast<double>(logits[i]) - mx);
      std::discrete_distribution<int> dist(p.begin(), p.end());
      tokens.push_back(dist(rng));
    }
  }
  const KvAccuracy acc = Measure(m, tokens, n_ctx, c.name);
  // Random weights give very sharp, chaotic next-token distributions (their
  // own samples score perplexity ~2.2) that amplify any change: even f32
  // against f16 KV agrees on only ~99% of argmaxes. bf16 stays within 1%
  // perplexity; FP8 and int8 are far outside the bound here
  // (measured +114..131% and +5.6..10.7%, agreement 0.62..0.69 and
  // 0.86..0.90; docs/PERFORMANCE.md). The bounds sit just outside the
  // measured values, as a regression guard; they hold on every ISA (the
  // weights' kernels round differently per ISA: on AVX2 bf16 MQA measured
  // +1.06 %, FP8 up to +137 %; on AVX-512, whose F16 weights run bf16
  // products at every batch size since session 17, int8 MQA +13.7 %).
  ExpectWithinBounds(acc, {{KvType::kBf16, 0.015, 0.965}, {KvType::kFp8E4M3, 1.6, 0.6}, {KvType::kInt8, 0.16, 0.84}});
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Shapes, KvDtypeRandomModelTest,
                         ::testing::Values(RandomCase{"mha_hd64", 4, 4, 64}, RandomCase{"gqa_hd32", 8, 2, 32},
                                           RandomCase{"mqa_hd128", 2, 1, 128}),
                         [](const ::testing::TestParamInfo<RandomCase>& info) { return std::string(info.param.name); });

// The per-phase evaluation (prefill, then decode steps) with an f32 cache
// equals scoring each window in one prefill pass with logits at every
// position: an independent check of the windowing and the NLL sums. On
// stories260K (f32 weights: prefill and decode matmuls agree to rounding;
// random-weight models amplify their differences too much for a tight bound).
TEST(PerplexityTest, MatchesOnePassPrefillWithF32Cache) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  ThreadPool pool(2);
  auto file = GgufFile::Open(pagoda::testing::TestDataPath("stories260K.gguf"));
  ASSERT_TRUE(file.ok());
  std::shared_ptr<const GgufFile> shared = std::move(*file);
  auto tok = Tokenizer::FromMetadata(shared->metadata());
  ASSERT_TRUE(tok.ok());
  auto model = LoadModel(shared, pool);
  ASSERT_TRUE(model.ok());
  Model& m = **model;
  const std::vector<TokenId> tokens = (*tok)->Encode(
      ReadText(std::string(PAGODA_SOURCE_DIR) + "/tests/data/tiny_stories.txt"), true, false);
  const int32_t n_ctx = 64;
  PerplexityOptions o;
  o.n_ctx = n_ctx;
  o.kv_type = KvType::kF32;
  o.max_windows = 3;
  auto r = ComputePerplexity(m, tokens, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->n_windows, 3);
  EXPECT_EQ(r->n_scored, 3 * (n_ctx - n_ctx / 2));

  double nll = 0;
  int64_t n = 0;
  for (int w = 0; w < 3; ++w) {
    auto kv = ContiguousKvCache::Create(m.kv_cache_spec(), 1, n_ctx, KvType::kF32);
    ASSERT_TRUE(kv.ok());
    Batch b;
    for (int32_t i = 0; i < n_ctx - 1; ++i) b.Add(tokens[w * n_ctx + i], i, 0, i >= n_ctx / 2 - 1);
    std::vector<float> logits(b.n_outputs() * m.n_vocab());
    ASSERT_TRUE(m.Forward(b, **kv, logits).ok());
    for (int64_t k = 0; k < b.n_outputs(); ++k) {
      const float* row = logits.data() + k * m.n_vocab();
      double mx = row[0], sum = 0;
      for (int64_t v = 1; v < m.n_vocab(); ++v) mx = std::max(mx, static_cast<double>(row[v]));
      for (int64_t v = 0; v < m.n_vocab(); ++v) sum += std::exp(row[v] - mx);
      nll += std::log(sum) + mx - row[tokens[w * n_ctx + n_ctx / 2 + k]];
      ++n;
    }
  }
  EXPECT_EQ(n, r->n_scored);
  EXPECT_NEAR(r->perplexity, std::exp(nll / n), 1e-4 * r->perplexity);
}

TEST(PerplexityTest, RejectsTextShorterThanAWindow) {
  RandomModelSpec spec;
  spec.n_vocab = 320;
  const std::string path = (::pagoda::testing::TempDirForProcess() / "pagoda_ppl_short.gguf").string();
  ASSERT_TRUE(WriteRandomModel(spec, path).ok());
  ThreadPool pool(1);
  auto model = LoadModel(path, pool);
  ASSERT_TRUE(model.ok());
  const std::vector<TokenId> tokens(10, 3);
  PerplexityOptions o;
  o.n_ctx = 64;
  auto r = ComputePerplexity(**model, tokens, o);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("less than one window"), std::string::npos);
  o.n_ctx = 4;
  EXPECT_FALSE(ComputePerplexity(**model, std::vector<TokenId>{1, 2, 999, 4}, o).ok());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagoda
