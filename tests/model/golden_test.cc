// Greedy decoding and top-5 probabilities against llama.cpp reference outputs:
// the real stories260K model and the synthetic llama / qwen2 models.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

using nlohmann::json;

constexpr int32_t kEos = 2;

struct Generation {
  std::vector<int32_t> ids;
  std::vector<int32_t> runner_up;     // second-best id per generated position
  std::vector<double> top2_gap;       // best minus second-best logit
  std::vector<std::vector<double>> probs;  // softmax of the raw logits, per generated position
};

std::vector<double> SoftmaxDouble(const float* logits, int64_t n) {
  double mx = logits[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  std::vector<double> p(n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += (p[i] = std::exp(logits[i] - mx));
  for (double& v : p) v /= sum;
  return p;
}

int32_t Argmax(const float* logits, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

// Prompt in one batch, then one token per step, as llama.cpp's server does.
// The cache is f16, llama.cpp's default, which the references were made with.
Generation GenerateGreedy(Model& model, const std::vector<int32_t>& prompt, int n_predict,
                          int n_probs_positions) {
  auto kv = ContiguousKvCache::Create(model.kv_cache_spec(), 1, 2048, KvType::kF16);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  const int64_t n_vocab = model.n_vocab();
  std::vector<float> logits(n_vocab);
  Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) {
    batch.Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  }
  Generation g;
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (int step = 0; step < n_predict; ++step) {
    Status st = model.Forward(batch, **kv, logits);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) break;
    const int32_t next = Argmax(logits.data(), n_vocab);
    g.ids.push_back(next);
    int32_t second = next == 0 ? 1 : 0;
    for (int32_t i = 0; i < n_vocab; ++i) {
      if (i != next && logits[i] > logits[second]) second = i;
    }
    g.runner_up.push_back(second);
    g.top2_gap.push_back(static_cast<double>(logits[next]) - logits[second]);
    if (step < n_probs_positions) g.probs.push_back(SoftmaxDouble(logits.data(), n_vocab));
    if (next == kEos) break;
    batch.Clear();
    batch.Add(next, pos++, 0, true);
  }
  return g;
}

struct GoldenCase {
  const char* file;       // relative to the test data dir
  const char* reference;  // JSON
  // Bound on |p_ours - p_llama.cpp| over the recorded top-5 probabilities,
  // with the f16 KV cache. The reference llama.cpp run used its default f16
  // cache and non-flash attention, which round K, V, Q and the softmax weights
  // P to f16; our f16 attention rounds the same values the same way (see
  // kernels/cpu/ops.h). Most positions then agree to <1e-5..1e-4 (with an
  // f32 cache it was 1.35e-3 on stories260K, up to 1.6e-2 on the random models).
  // What is left are f16 rounding ties: K, V and Q come out of f32 matmuls
  // whose summation order differs from ggml's, so now and then a value lands on
  // the other side of an f16 rounding boundary and moves by 2^-11 relative,
  // which the peaked random-weight models amplify at a few positions. Evidence:
  // the maxima below change with nothing but our matmul ISA (summation order),
  // e.g. qwen2 5.6e-5 with AVX-512 and 1.3e-3 with scalar or AVX2 kernels, and
  // computing our attention in double instead barely moves them. Observed
  // maxima (AVX-512 / AVX2 / scalar kernels): stories260K 9.1e-4 / 8.4e-4 /
  // 8.4e-4, llama_gqa 3.2e-3 / 1.3e-3 / 1.7e-3 (at "Sun and rain" position 2
  // and "A" position 5, the rest < 1e-3), llama_rope_scaled 5.3e-4 / 3.3e-4 /
  // 4.0e-4, qwen2 5.6e-5 / 1.3e-3 / 1.3e-3.
  double prob_tolerance;
  // > 0: a greedy pick may also differ where llama.cpp's token is our
  // runner-up within this many logits (MLA: llama.cpp b4747 rounds the
  // decompressed per-head K and V to f16, we round the latent; the float64
  // reference of reference_forward_moe.h differs from llama.cpp the same way).
  double runner_up_margin = 0.0;
};

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, GreedyIdsAndTop5ProbabilitiesMatchLlamaCpp) {
  const GoldenCase& c = GetParam();
  PAGODA_REQUIRE_TESTDATA(c.file);
  PAGODA_REQUIRE_TESTDATA(c.reference);
  ThreadPool pool(2);
  auto model = LoadModel(testing::TestDataPath(c.file), pool);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::ifstream in(testing::TestDataPath(c.reference));
  const json ref = json::parse(in);

  const double kProbTolerance = c.prob_tolerance;
  double max_diff = 0.0;
  int n_cases = 0;
  for (const json& cs : ref["cases"]) {
    const auto prompt = cs["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto want = cs["generated_token_ids"].get<std::vector<int32_t>>();
    const Generation got = GenerateGreedy(**model, prompt, static_cast<int>(want.size()), 8);
    SCOPED_TRACE("prompt '" + cs["prompt"].get<std::string>() + "'");
    // A greedy pick may differ only where llama.cpp's top-1/top-2 logit gap was tiny.
    size_t n_same = 0;
    while (n_same < want.size() && n_same < got.ids.size() && got.ids[n_same] == want[n_same]) ++n_same;
    if (n_same < want.size()) {
      const bool near_tie = (cs.contains("min_top1_top2_logit_gap_position") &&
                             cs["min_top1_top2_logit_gap_position"].get<size_t>() == n_same &&
                             cs["min_top1_top2_logit_gap"].get<double>() < 0.01) ||
                            (n_same < got.ids.size() && got.runner_up[n_same] == want[n_same] &&
                             got.top2_gap[n_same] < c.runner_up_margin);
      EXPECT_TRUE(near_tie) << "greedy ids diverge at position " << n_same << ": got "
                            << (n_same < got.ids.size() ? got.ids[n_same] : -1) << ", want "
                            << want[n_same];
    }
    for (const json& p : cs["top5_first_positions"]) {
      const size_t pos = p["position"].get<size_t>();
      if (pos >= n_same || pos >= got.probs.size()) break;
      for (const json& t : p["top5"]) {
        const double diff = std::abs(got.probs[pos][t["id"].get<int>()] - t["prob"].get<double>());
        max_diff = std::max(max_diff, diff);
        EXPECT_LE(diff, kProbTolerance) << "position " << pos << " token " << t["id"];
      }
    }
    ++n_cases;
  }
  EXPECT_GT(n_cases, 0);
  std::printf("[ %s ] %d prompts, max |prob diff| over recorded top-5 = %.3g\n", c.file, n_cases,
              max_diff);
}

INSTANTIATE_TEST_SUITE_P(
    Models, GoldenTest,
    ::testing::Values(GoldenCase{"stories260K.gguf", "stories260K.reference.json", 1e-3},
                      GoldenCase{"synthetic/llama_gqa.gguf", "synthetic/llama_gqa.reference.json", 4e-3},
                      GoldenCase{"synthetic/llama_rope_scaled.gguf",
                                 "synthetic/llama_rope_scaled.reference.json", 1e-3},
                      GoldenCase{"synthetic/qwen2.gguf", "synthetic/qwen2.reference.json", 2e-3},
                      GoldenCase{"synthetic/qwen2moe.gguf", "synthetic/qwen2moe.reference.json", 4e-3},
                      GoldenCase{"synthetic/llama_moe.gguf", "synthetic/llama_moe.reference.json", 4e-3},
                      // MLA: f16 rounding of the latent instead of llama.cpp's per-head K/V
                      // (observed: 9.4e-3 / 5.8e-3 with the f16 cache; 6.2e-3 with an f32 cache,
                      // which the float64 reference also shows).
                      GoldenCase{"synthetic/deepseek2.gguf", "synthetic/deepseek2.reference.json", 1.2e-2, 0.05},
                      GoldenCase{"synthetic/deepseek2_v3style.gguf",
                                 "synthetic/deepseek2_v3style.reference.json", 8e-3, 0.05}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string n = info.param.file;
      n = n.substr(n.rfind('/') + 1);
      n = n.substr(0, n.find('.'));
      return n;
    });

}  // namespace
}  // namespace pagoda
