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
Generation GenerateGreedy(Model& model, const std::vector<int32_t>& prompt, int n_predict,
                          int n_probs_positions) {
  auto kv = ContiguousKvCache::Create(model.kv_cache_spec(), 1, 2048);
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
  // Bound on |p_ours - p_llama.cpp| over the recorded top-5 probabilities.
  // Our attention keeps Q, K, V and the softmax weights in f32 (and agrees
  // with the float64 reference to ~3e-7, model_reference_test.cc); the
  // reference llama.cpp run rounds all four to f16 (f16 KV cache, non-flash
  // attention). Emulating those roundings brought most positions to ~1e-6, so
  // the gap is theirs; it is ~1e-3 on stories260K and up to ~1.6e-2 on the
  // peaked random-weight models.
  double prob_tolerance;
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
      const bool near_tie = cs.contains("min_top1_top2_logit_gap_position") &&
                            cs["min_top1_top2_logit_gap_position"].get<size_t>() == n_same &&
                            cs["min_top1_top2_logit_gap"].get<double>() < 0.01;
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
        EXPECT_LT(diff, kProbTolerance) << "position " << pos << " token " << t["id"];
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
    ::testing::Values(GoldenCase{"stories260K.gguf", "stories260K.reference.json", 2.5e-3},
                      GoldenCase{"synthetic/llama_gqa.gguf", "synthetic/llama_gqa.reference.json", 3e-2},
                      GoldenCase{"synthetic/llama_rope_scaled.gguf",
                                 "synthetic/llama_rope_scaled.reference.json", 3e-2},
                      GoldenCase{"synthetic/qwen2.gguf", "synthetic/qwen2.reference.json", 3e-2}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string n = info.param.file;
      n = n.substr(n.rfind('/') + 1);
      n = n.substr(0, n.find('.'));
      return n;
    });

}  // namespace
}  // namespace pagoda
