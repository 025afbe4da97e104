// The float64 reference forward (reference_forward.h) against llama.cpp on the
// synthetic MoE / MLA fixtures of ../shared/testdata/synthetic: greedy ids and
// top-5 probabilities. This is what makes the reference a yardstick for the
// engine in moe_model_reference_test.cc.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gguf/gguf_file.h"
#include "model/reference_forward.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

using nlohmann::json;

std::vector<double> Softmax(const std::vector<double>& logits) {
  double mx = logits[0];
  for (double v : logits) mx = std::max(mx, v);
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < p.size(); ++i) sum += (p[i] = std::exp(logits[i] - mx));
  for (double& v : p) v /= sum;
  return p;
}

struct GoldenCase {
  const char* name;  // synthetic/<name>.gguf and .reference.json
  // Bound on |p_reference - p_llama.cpp| over the recorded top-5. llama.cpp
  // ran with its default f16 KV cache (K, V, Q and the softmax weights
  // rounded to 2^-11 relative), which the random models amplify at a few
  // positions; the reference is exact (model_reference_test saw the same
  // effect up to 1.6e-2 on dense random models). Observed maxima: qwen2moe
  // 8.0e-3, llama_moe 1.26e-2 ('Lily and Tom' position 5), deepseek2 6.2e-3,
  // deepseek2_v3style 3.7e-3.
  double prob_tolerance;
};

// Logit gap under which the reference may pick the other of two tokens than
// llama.cpp: its f16 KV cache moves logits of ~20 by up to ~0.03 here
// (recorded top-1 / top-2 gaps at the divergences: 0.015, 0.029). The
// reference's own gaps there: 0.001 to 0.0097.
constexpr double kNearTie = 0.05;

class MoeReferenceGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

// Teacher-forced: one reference pass over the prompt and llama.cpp's greedy
// continuation gives the logits of every generated position; each must pick
// llama.cpp's next id (a divergence is allowed only where llama.cpp's top-1 /
// top-2 logit gap was tiny; nothing after it is compared).
TEST_P(MoeReferenceGoldenTest, GreedyIdsAndTop5MatchLlamaCpp) {
  const GoldenCase& c = GetParam();
  const std::string model = std::string("synthetic/") + c.name + ".gguf";
  const std::string reference = std::string("synthetic/") + c.name + ".reference.json";
  PAGODA_REQUIRE_TESTDATA(model);
  PAGODA_REQUIRE_TESTDATA(reference);
  auto file = GgufFile::Open(testing::TestDataPath(model));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const testing::ReferenceModel ref(**file);
  std::ifstream in(testing::TestDataPath(reference));
  const json golden = json::parse(in);

  double max_diff = 0.0;
  int n_cases = 0, n_ids = 0;
  for (const json& cs : golden["cases"]) {
    SCOPED_TRACE("prompt '" + cs["prompt"].get<std::string>() + "'");
    const auto prompt = cs["prompt_token_ids"].get<std::vector<int32_t>>();
    const auto want = cs["generated_token_ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), want.begin(), want.end() - 1);
    const auto logits = ref.Forward(seq);
    size_t n_same = 0;
    for (; n_same < want.size(); ++n_same) {
      const auto& l = logits[prompt.size() - 1 + n_same];
      const int32_t got = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
      if (got != want[n_same]) break;
    }
    n_ids += int(n_same);
    if (n_same < want.size()) {
      // llama.cpp's pick must be the reference's runner-up, within kNearTie.
      const auto& l = logits[prompt.size() - 1 + n_same];
      const double best = *std::max_element(l.begin(), l.end());
      int n_above = 0;
      for (double v : l) n_above += v > l[want[n_same]];
      const double gap = best - l[want[n_same]];
      std::printf("[ %s ] '%s': diverges at position %zu, reference gap to llama.cpp's pick %.4f\n", c.name,
                  cs["prompt"].get<std::string>().c_str(), n_same, gap);
      EXPECT_TRUE(n_above == 1 && gap < kNearTie)
          << "greedy ids diverge at position " << n_same << ": llama.cpp's " << want[n_same] << " is "
          << gap << " below the reference's best, rank " << n_above + 1;
    }
    for (const json& p : cs["top5_first_positions"]) {
      const size_t pos = p["position"].get<size_t>();
      if (pos >= n_same) break;
      const auto probs = Softmax(logits[prompt.size() - 1 + pos]);
      for (const json& t : p["top5"]) {
        const double diff = std::abs(probs[t["id"].get<int>()] - t["prob"].get<double>());
        max_diff = std::max(max_diff, diff);
        EXPECT_LE(diff, c.prob_tolerance) << "position " << pos << " token " << t["id"];
      }
    }
    ++n_cases;
  }
  EXPECT_GT(n_cases, 0);
  std::printf("[ %s ] %d prompts, %d greedy ids equal, max |prob diff| over recorded top-5 = %.3g\n", c.name,
              n_cases, n_ids, max_diff);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, MoeReferenceGoldenTest,
                         ::testing::Values(GoldenCase{"qwen2moe", 1e-2}, GoldenCase{"llama_moe", 1.5e-2},
                                           GoldenCase{"deepseek2", 1e-2}, GoldenCase{"deepseek2_v3style", 1e-2}),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace pagoda
