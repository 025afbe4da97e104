// Accuracy of --decode-weights (docs/QUANTIZATION.md): perplexity and
// teacher-forced top-1 agreement of 4-bit decode copies against the
// Q8_0-only run of the same checkpoint, on stories260K converted to Q8_0 by QuantizeModel (over
// tests/data/tiny_stories.txt) and on random-weight Q8_0 models (over text
// they sampled themselves). ComputePerplexity scores decode steps, so the
// scored tokens run through the decode copies.
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

#include "engine/perplexity.h"
#include "model/quantize_model.h"
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

struct Accuracy {
  double ppl_ref = 0, ppl = 0, agreement = 0;
};

// Perplexity of both models and the decode-weight model's top-1 agreement
// with the Q8_0-only model (teacher-forced on the latter's greedy output).
Accuracy Measure(Model& ref, Model& test, const std::vector<TokenId>& tokens, int32_t n_ctx, const char* name,
                 const char* type) {
  Accuracy acc;
  PerplexityOptions o;
  o.n_ctx = n_ctx;
  auto a = ComputePerplexity(ref, tokens, o);
  auto b = ComputePerplexity(test, tokens, o);
  EXPECT_TRUE(a.ok() && b.ok());
  if (!a.ok() || !b.ok()) return acc;
  std::vector<std::vector<TokenId>> prompts;
  for (size_t w = 0; (w + 1) * n_ctx <= tokens.size(); ++w) {
    prompts.emplace_back(tokens.begin() + w * n_ctx, tokens.begin() + w * n_ctx + n_ctx / 2);
  }
  auto agree = CompareTopTokens(EvalConfig{&ref, KvType::kF16}, EvalConfig{&test, KvType::kF16}, prompts,
                                n_ctx - n_ctx / 2);
  EXPECT_TRUE(agree.ok());
  if (!agree.ok()) return acc;
  acc.ppl_ref = a->perplexity;
  acc.ppl = b->perplexity;
  acc.agreement = agree->fraction();
  std::printf("[decode-weights] %s: Q8_0 perplexity %.4f, with %s decode weights %.4f (%+.3f%%) over %lld tokens; "
              "top-1 agreement %.4f over %lld positions\n",
              name, acc.ppl_ref, type, acc.ppl, 100.0 * (acc.ppl / acc.ppl_ref - 1.0),
              static_cast<long long>(b->n_scored), acc.agreement, static_cast<long long>(agree->n_positions));
  return acc;
}

// The issue asks for < 1% perplexity change and >= 99% top-1 agreement.
// Plain 4-bit rounding does not reach that on these models (measured:
// stories260K +6.9..8.4%, 88% agreement; the random-weight models, whose
// next-token choice is chaotic in the weights, far less; docs/PERFORMANCE.md
// "Decode weights"). These bounds pin the measured accuracy so a regression
// in the quantizer or the routing shows; they are not the targets.
void ExpectStories260KBounds(const Accuracy& acc) {
  EXPECT_LT(std::abs(acc.ppl / acc.ppl_ref - 1.0), 0.10);
  EXPECT_GE(acc.agreement, 0.85);
}

class DecodeWeightsAccuracy : public ::testing::TestWithParam<DType> {};

TEST_P(DecodeWeightsAccuracy, Stories260KQ8_0) {
  PAGODA_REQUIRE_TESTDATA("stories260K.gguf");
  const DType type = GetParam();
  ThreadPool pool(2);
  const std::string q8 = (::pagoda::testing::TempDirForProcess() / "pagoda_dwacc_stories_q8_0.gguf").string();
  QuantizeModelOptions qo;
  qo.type = DType::kQ8_0;
  ASSERT_TRUE(QuantizeModelFile(pagoda::testing::TestDataPath("stories260K.gguf"), q8, qo, pool).ok());
  auto file = GgufFile::Open(q8);
  ASSERT_TRUE(file.ok());
  std::shared_ptr<const GgufFile> shared = std::move(*file);
  auto tok = Tokenizer::FromMetadata(shared->metadata());
  ASSERT_TRUE(tok.ok());
  ModelOptions mo;
  auto ref = LoadModel(shared, pool, mo);
  mo.decode_weights = type;
  auto test = LoadModel(shared, pool, mo);
  ASSERT_TRUE(ref.ok() && test.ok()) << test.status().ToString();
  const std::string text = ReadText(std::string(PAGODA_SOURCE_DIR) + "/tests/data/tiny_stories.txt");
  const std::vector<TokenId> tokens = (*tok)->Encode(text, /*add_special=*/true, /*parse_special=*/false);
  ASSERT_GE(tokens.size(), 1024u);
  ExpectStories260KBounds(Measure(**ref, **test, tokens, 256, "stories260K", DTypeName(type)));
  std::filesystem::remove(q8);
}

struct RandomCase {
  const char* name;
  int n_embd, n_head, n_head_kv, n_ff;
};

class DecodeWeightsRandomAccuracy : public ::testing::TestWithParam<std::tuple<RandomCase, DType>> {};

// The text is the Q8_0 model's own sample (temperature 1).
TEST_P(DecodeWeightsRandomAccuracy, FollowsQ8_0) {
  const auto [c, type] = GetParam();
  RandomModelSpec spec;
  spec.n_embd = c.n_embd;
  spec.n_layer = 2;
  spec.n_head = c.n_head;
  spec.n_head_kv = c.n_head_kv;
  spec.n_ff = c.n_ff;
  spec.n_vocab = 320;
  spec.weight_type = DType::kQ8_0;
  spec.seed = 13;
  const std::string path =
      (::pagoda::testing::TempDirForProcess() / (std::string("pagoda_dwacc_") + c.name + ".gguf")).string();
  ASSERT_TRUE(WriteRandomModel(spec, path).ok());
  ThreadPool pool(2);
  ModelOptions mo;
  auto ref = LoadModel(path, pool, mo);
  mo.decode_weights = type;
  auto test = LoadModel(path, pool, mo);
  ASSERT_TRUE(ref.ok() && test.ok());
  Model& m = **ref;
  const int32_t n_tokens = 1024;
  std::vector<TokenId> tokens = {1};
  {
    auto kv = ContiguousKvCache::Create(m.kv_cache_spec(), 1, n_tokens, KvType::kF16);
    ASSERT_TRUE(kv.ok());
    std::vector<float> logits(m.n_vocab());
    std::mt19937 rng(3);
    Batch b;
    while (static_cast<int32_t>(tokens.size()) < n_tokens) {
      b.Clear();
      b.Add(tokens.back(), static_cast<int32_t>(tokens.size()) - 1, 0, true);
      ASSERT_TRUE(m.Forward(b, **kv, logits).ok());
      std::vector<double> p(logits.size());
      const float mx = *std::max_element(logits.begin(), logits.end());
      for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp(static_cast<double>(logits[i]) - mx);
      std::discrete_distribution<int> dist(p.begin(), p.end());
      tokens.push_back(dist(rng));
    }
  }
  // Far above chance (1/320) but far below the 99%: see above.
  const Accuracy acc = Measure(**ref, **test, tokens, 256, c.name, DTypeName(type));
  EXPECT_GT(acc.agreement, 0.2);
  EXPECT_GT(acc.ppl, 0.0);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Types, DecodeWeightsAccuracy, ::testing::Values(DType::kQ4_0, DType::kQ4_K),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

INSTANTIATE_TEST_SUITE_P(
    Shapes, DecodeWeightsRandomAccuracy,
    ::testing::Combine(::testing::Values(RandomCase{"e256_gqa", 256, 4, 2, 512}, RandomCase{"e512_mha", 512, 8, 8, 1024}),
                       ::testing::Values(DType::kQ4_0, DType::kQ4_K)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + DTypeName(std::get<1>(info.param));
    });

}  // namespace
}  // namespace pagoda
