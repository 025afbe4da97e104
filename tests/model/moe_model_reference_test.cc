// The engine against the float64 reference forward (reference_forward.h,
// itself checked against llama.cpp in moe_reference_golden_test.cc) for every
// MoE / MLA architecture and layout written by WriteRandomModel, with each
// expert tensor type. Like model_reference_test.cc for the dense models.
//
// Routing is discontinuous: a token whose k-th and (k+1)-th expert scores are
// nearly tied may pick either after any rounding. Each case therefore takes
// the first seed whose reference routing has no gap below kMinRoutingGap at
// the top-k (and group) boundaries, and asserts it found one, so a tie can
// never make the test flaky; the engine must then choose the reference's
// experts everywhere, which the scalar-kernel bound checks.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/matmul.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/reference_forward.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

constexpr double kMinRoutingGap = 1e-4;

struct Comparison {
  double max_abs = 0.0;  // max |engine - reference| over all compared logits
  double max_ref = 0.0;  // max |reference|
  double rel() const { return max_abs / std::max(1.0, max_ref); }
  // Per compared row: max |engine - reference| / max(1, max |reference|).
  std::vector<double> row_rel;
  double RowRelMedian() const {
    std::vector<double> v = row_rel;
    if (v.empty()) return 0.0;
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  }
  double ShareOfRowsBelow(double bound) const {
    size_t n = 0;
    for (double r : row_rel) n += r < bound;
    return row_rel.empty() ? 1.0 : static_cast<double>(n) / row_rel.size();
  }
};

// The prompt as one prefill batch (logits everywhere), then one decode step
// at a time, with a second sequence prefilling two tokens per step in the
// same batches (as model_reference_test.cc does).
Comparison CompareWithReference(const std::string& path, const std::vector<std::vector<double>>& want,
                                const std::vector<int32_t>& tokens, size_t n_prefill, KvType kv_type,
                                std::vector<std::vector<float>>* engine_logits = nullptr,
                                bool mla_decompress = false) {
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (!file.ok()) return {1e9, 1};
  std::shared_ptr<const GgufFile> shared(std::move(file).value());
  ThreadPool pool(2);
  ModelOptions opt;
  opt.mla_decompress = mla_decompress;
  auto model = LoadModel(shared, pool, opt);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return {1e9, 1};
  const int64_t V = (*model)->n_vocab();
  auto kv = ContiguousKvCache::Create((*model)->kv_cache_spec(), 2, 256, kv_type);
  EXPECT_TRUE(kv.ok()) << kv.status().ToString();
  if (!kv.ok()) return {1e9, 1};
  if (engine_logits) engine_logits->assign(tokens.size(), {});

  Comparison c;
  auto check = [&](const float* got, size_t pos, bool seq0) {
    double row_abs = 0.0, row_ref = 0.0;
    for (int64_t i = 0; i < V; ++i) {
      row_abs = std::max(row_abs, std::abs(got[i] - want[pos][i]));
      row_ref = std::max(row_ref, std::abs(want[pos][i]));
    }
    c.max_abs = std::max(c.max_abs, row_abs);
    c.max_ref = std::max(c.max_ref, row_ref);
    c.row_rel.push_back(row_abs / std::max(1.0, row_ref));
    if (engine_logits && seq0) (*engine_logits)[pos].assign(got, got + V);
  };
  Batch b;
  for (size_t i = 0; i < n_prefill; ++i) b.Add(tokens[i], static_cast<int32_t>(i), 0, true);
  std::vector<float> logits(2 * std::max<size_t>(n_prefill, 1) * V);
  Status st = (*model)->Forward(b, **kv, logits);
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (size_t i = 0; i < n_prefill; ++i) check(logits.data() + i * V, i, true);
  size_t seq1_next = 0;
  for (size_t i = n_prefill; i < tokens.size(); ++i) {
    b.Clear();
    b.Add(tokens[i], static_cast<int32_t>(i), 0, true);
    const size_t seq1_end = std::min(seq1_next + 2, i + 1);
    for (size_t j = seq1_next; j < seq1_end; ++j) b.Add(tokens[j], static_cast<int32_t>(j), 1, j + 1 == seq1_end);
    st = (*model)->Forward(b, **kv, logits);
    EXPECT_TRUE(st.ok()) << st.ToString();
    check(logits.data(), i, true);
    if (seq1_end > seq1_next) check(logits.data() + V, seq1_end - 1, false);
    seq1_next = seq1_end;
  }
  return c;
}

std::vector<int32_t> TestTokens(int n, int n_vocab, int salt) {
  std::vector<int32_t> t;
  uint32_t s = 12345u + salt;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>((s >> 8) % n_vocab));
  }
  return t;
}

// n_embd and n_ff_exp 256: whole K-quant super-blocks in every expert row.
// The non-expert tensors are F32 (model_reference_test covers their types),
// so the expert type is the only rounding in the weights.
RandomModelSpec VariantSpec(const std::string& v) {
  RandomModelSpec s;
  s.n_embd = 256;
  s.n_layer = 2;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.n_ff = 256;
  s.n_vocab = 320;
  s.weight_type = DType::kF32;
  s.n_expert = 8;
  s.n_expert_used = 2;
  s.n_ff_exp = 256;
  s.rms_eps = 1e-6f;
  auto deepseek2 = [&](bool current, int q_lora) {
    s.arch = "deepseek2";
    s.n_layer = 3;
    s.n_layer_dense_lead = 1;
    s.n_expert_shared = 1;
    s.q_lora_rank = q_lora;
    s.kv_lora_rank = 64;
    s.qk_rope_dim = 16;
    s.qk_nope_dim = 32;
    s.v_head_dim = 32;
    s.mla_split_kv_b = current;
    s.expert_weights_scale = 2.0f;  // DeepSeek-V2: softmax, no renormalisation
  };
  auto v3_routing = [&] {
    s.expert_gating_func = 2;
    s.exp_probs_b = true;
    s.expert_weights_norm = true;
    s.expert_weights_scale = 2.5f;
  };
  if (v == "qwen2moe") {
    s.arch = "qwen2moe";
    s.n_ff_shexp = 256;
  } else if (v == "qwen3moe") {
    s.arch = "qwen3moe";
    s.head_dim = 128;  // key_length != n_embd / n_head
  } else if (v == "qwen3moe_merged_gate_up") {
    s.arch = "qwen3moe";
    s.merged_gate_up_exps = true;
  } else if (v == "llama_moe") {
    s.arch = "llama";
  } else if (v == "deepseek2_early_qlora_softmax") {
    deepseek2(false, 64);
  } else if (v == "deepseek2_current_qlora_softmax") {
    deepseek2(true, 64);
  } else if (v == "deepseek2_early_lite_sigmoid_bias") {
    deepseek2(false, 0);
    v3_routing();
  } else if (v == "deepseek2_current_lite_sigmoid_bias") {
    deepseek2(true, 0);
    v3_routing();
  } else if (v == "deepseek2_current_groups") {
    deepseek2(true, 64);
    v3_routing();
    s.n_expert_groups = 4;
    s.n_group_used = 2;
  } else if (v == "deepseek2_current_yarn") {
    deepseek2(true, 64);
    v3_routing();
    s.rope_scaling_factor = 4.0f;
    s.rope_scaling_orig_ctx = 8;  // the 24 test positions run past it
    s.yarn_log_multiplier = 0.1f;
    s.yarn_beta_fast = 32.0f;
    s.yarn_beta_slow = 1.0f;
  } else if (v == "glm4moe") {
    s.arch = "glm4moe";
    s.n_layer = 3;  // 1 dense, 1 MoE, 1 NextN block (skipped)
    s.n_layer_dense_lead = 1;
    s.nextn_predict_layers = 1;
    s.n_expert_shared = 1;
    s.qk_norm = true;
    s.exp_probs_b = true;
    s.expert_weights_norm = true;
    s.expert_weights_scale = 2.5f;
  } else {
    ADD_FAILURE() << "unknown variant " << v;
  }
  return s;
}

const char* const kVariants[] = {"qwen2moe",
                                 "qwen3moe",
                                 "qwen3moe_merged_gate_up",
                                 "llama_moe",
                                 "deepseek2_early_qlora_softmax",
                                 "deepseek2_current_qlora_softmax",
                                 "deepseek2_early_lite_sigmoid_bias",
                                 "deepseek2_current_lite_sigmoid_bias",
                                 "deepseek2_current_groups",
                                 "deepseek2_current_yarn",
                                 "glm4moe"};

const DType kExpertTypes[] = {DType::kQ4_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                              DType::kQ8_0, DType::kBF16, DType::kF16};

struct Case {
  const char* variant;
  DType expert_type;
};

std::string CaseName(const Case& c) { return std::string(c.variant) + "_" + DTypeName(c.expert_type); }

// Writes the variant with the first seed (from 7) whose reference routing
// keeps every boundary gap >= kMinRoutingGap; returns the reference logits.
std::vector<std::vector<double>> WriteUntieable(const RandomModelSpec& base, const std::string& path,
                                                const std::vector<int32_t>& tokens, uint64_t* seed_out) {
  for (uint64_t seed = 7; seed < 7 + 16; ++seed) {
    RandomModelSpec spec = base;
    spec.seed = seed;
    Status st = WriteRandomModel(spec, path);
    EXPECT_TRUE(st.ok()) << st.ToString();
    if (!st.ok()) return {};
    auto file = GgufFile::Open(path);
    EXPECT_TRUE(file.ok()) << file.status().ToString();
    if (!file.ok()) return {};
    testing::ref::RoutingStats routing;
    auto logits = testing::ReferenceModel(**file).Forward(tokens, &routing);
    EXPECT_GT(routing.decisions, 0);
    if (routing.min_gap >= kMinRoutingGap) {
      *seed_out = seed;
      return logits;
    }
  }
  ADD_FAILURE() << "no seed in [7, 23) keeps the routing gaps >= " << kMinRoutingGap;
  return {};
}

class MoeModelReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(MoeModelReferenceTest, LogitsMatchFloat64Reference) {
  const Case c = GetParam();
  RandomModelSpec spec = VariantSpec(c.variant);
  spec.expert_type = c.expert_type;
  const std::string path =
      (::pagoda::testing::TempDirForProcess() / ("pagoda_moe_ref_" + CaseName(c) + ".gguf")).string();
  const auto tokens = TestTokens(24, spec.n_vocab, 1);
  uint64_t seed = 0;
  const auto want = WriteUntieable(spec, path, tokens, &seed);
  ASSERT_FALSE(want.empty());

  // 1) Scalar kernels, f32 KV cache: float rounding only, and the same
  //    experts as the reference everywhere (a different choice costs O(1)).
  const kernels::Isa fastest = kernels::ActiveIsa();
  kernels::SetIsaForTesting(kernels::Isa::kScalar);
  const Comparison exact = CompareWithReference(path, want, tokens, 16, KvType::kF32);
  kernels::SetIsaForTesting(fastest);
  EXPECT_LT(exact.rel(), 1e-4) << "scalar kernels: max abs " << exact.max_abs << ", max |ref| " << exact.max_ref;

  // 2) Fastest kernels (bf16 / 8-bit activations, as llama.cpp): a wiring
  //    check, as in model_reference_test.cc. Their rounding moves router
  //    scores by far more than kMinRoutingGap, so now and then a token picks
  //    the reference's runner-up expert, an O(1) change of that token's
  //    logits (0.2-0.6 relative here) and of the later positions it feeds.
  //    So the rows are bounded in bulk: most rows must be close (a flip is
  //    local), the typical row very close.
  const Comparison fast = CompareWithReference(path, want, tokens, 16, KvType::kF32);
  const double bound = 0.25;
  EXPECT_LT(fast.RowRelMedian(), 0.05) << kernels::IsaName(fastest) << " kernels";
  EXPECT_GE(fast.ShareOfRowsBelow(bound), 0.75) << kernels::IsaName(fastest) << " kernels: max abs " << fast.max_abs;

  // 3) The default f16 KV cache (for MLA: the latent and the rope key).
  const Comparison half = CompareWithReference(path, want, tokens, 16, KvType::kF16);
  std::filesystem::remove(path);
  EXPECT_LT(half.RowRelMedian(), 0.05) << "f16 KV cache";
  EXPECT_GE(half.ShareOfRowsBelow(bound), 0.75) << "f16 KV cache: max abs " << half.max_abs;
  std::printf("[ %s seed %llu ] relative error: scalar %.2g (bound 1e-4), %s %.2g (median row %.2g, %.0f%% rows < %.2g), "
              "f16 KV %.2g (median row %.2g)\n",
              CaseName(c).c_str(), static_cast<unsigned long long>(seed), exact.rel(), kernels::IsaName(fastest),
              fast.rel(), fast.RowRelMedian(), 100.0 * fast.ShareOfRowsBelow(bound), bound, half.rel(),
              half.RowRelMedian());
}

std::vector<Case> AllCases() {
  std::vector<Case> v;
  for (const char* variant : kVariants) {
    for (DType t : kExpertTypes) v.push_back({variant, t});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(VariantAndExpertType, MoeModelReferenceTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return CaseName(info.param); });

// The same seed in the early (attn_kv_b) and current (attn_k_b / attn_v_b)
// deepseek2 layouts holds the same numbers (F16: element-wise, so the
// transposed k_b rounds exactly like kv_b), so the reference logits agree to
// double rounding and the engine's to float rounding.
TEST(MoeModelReferenceTest, CurrentAndEarlyDeepseek2LayoutsGiveTheSameLogits) {
  for (const char* variant : {"deepseek2_current_qlora_softmax", "deepseek2_current_lite_sigmoid_bias"}) {
    SCOPED_TRACE(variant);
    RandomModelSpec spec = VariantSpec(variant);
    spec.weight_type = DType::kF16;
    spec.seed = 11;
    const auto dir = ::pagoda::testing::TempDirForProcess();
    const std::string current = (dir / "pagoda_moe_layout_current.gguf").string();
    const std::string early = (dir / "pagoda_moe_layout_early.gguf").string();
    ASSERT_TRUE(WriteRandomModel(spec, current).ok());
    spec.mla_split_kv_b = false;
    ASSERT_TRUE(WriteRandomModel(spec, early).ok());
    const auto tokens = TestTokens(20, spec.n_vocab, 3);
    auto fc = GgufFile::Open(current), fe = GgufFile::Open(early);
    ASSERT_TRUE(fc.ok() && fe.ok());
    const auto want_c = testing::ReferenceModel(**fc).Forward(tokens);
    const auto want_e = testing::ReferenceModel(**fe).Forward(tokens);
    double ref_diff = 0.0;
    for (size_t t = 0; t < tokens.size(); ++t) {
      for (size_t i = 0; i < want_c[t].size(); ++i) ref_diff = std::max(ref_diff, std::abs(want_c[t][i] - want_e[t][i]));
    }
    EXPECT_LT(ref_diff, 1e-9);

    const kernels::Isa fastest = kernels::ActiveIsa();
    kernels::SetIsaForTesting(kernels::Isa::kScalar);
    std::vector<std::vector<float>> got_c, got_e;
    const Comparison cc = CompareWithReference(current, want_c, tokens, 12, KvType::kF32, &got_c);
    const Comparison ce = CompareWithReference(early, want_e, tokens, 12, KvType::kF32, &got_e);
    kernels::SetIsaForTesting(fastest);
    EXPECT_LT(cc.rel(), 1e-4);
    EXPECT_LT(ce.rel(), 1e-4);
    ASSERT_EQ(got_c.size(), tokens.size());
    ASSERT_EQ(got_e.size(), tokens.size());
    double engine_diff = 0.0, engine_max = 1.0;
    for (size_t t = 0; t < tokens.size(); ++t) {
      ASSERT_EQ(got_c[t].size(), got_e[t].size());
      for (size_t i = 0; i < got_c[t].size(); ++i) {
        engine_diff = std::max(engine_diff, double(std::abs(got_c[t][i] - got_e[t][i])));
        engine_max = std::max(engine_max, double(std::abs(got_c[t][i])));
      }
    }
    EXPECT_LT(engine_diff / engine_max, 1e-4);
    std::filesystem::remove(current);
    std::filesystem::remove(early);
  }
}

// Decompressed MLA (per-head K/V expanded from the cached latents each step)
// computes the same attention as the absorbed form: both agree with the
// float64 reference, in both layouts, with an f32 cache and an fp8 one.
TEST(MoeModelReferenceTest, DecompressedMlaMatchesTheReference) {
  for (const char* variant : {"deepseek2_early_qlora_softmax", "deepseek2_current_lite_sigmoid_bias"}) {
    SCOPED_TRACE(variant);
    RandomModelSpec spec = VariantSpec(variant);
    spec.seed = 7;
    const std::string path = (::pagoda::testing::TempDirForProcess() / "pagoda_mla_decompress.gguf").string();
    ASSERT_TRUE(WriteRandomModel(spec, path).ok());
    const auto tokens = TestTokens(20, spec.n_vocab, 5);
    auto f = GgufFile::Open(path);
    ASSERT_TRUE(f.ok());
    const auto want = testing::ReferenceModel(**f).Forward(tokens);
    const kernels::Isa fastest = kernels::ActiveIsa();
    kernels::SetIsaForTesting(kernels::Isa::kScalar);
    std::vector<std::vector<float>> absorbed, decompressed;
    const Comparison a = CompareWithReference(path, want, tokens, 12, KvType::kF32, &absorbed, false);
    const Comparison d = CompareWithReference(path, want, tokens, 12, KvType::kF32, &decompressed, true);
    kernels::SetIsaForTesting(fastest);
    EXPECT_LT(a.rel(), 1e-4);
    EXPECT_LT(d.rel(), 1e-4);
    // With an fp8 cache both read the same stored latents.
    const Comparison d8 = CompareWithReference(path, want, tokens, 12, KvType::kFp8E4M3, nullptr, true);
    const Comparison a8 = CompareWithReference(path, want, tokens, 12, KvType::kFp8E4M3, nullptr, false);
    EXPECT_LT(std::abs(d8.rel() - a8.rel()), 0.05) << "absorbed " << a8.rel() << " decompressed " << d8.rel();
    std::printf("[ %s ] MLA absorbed %.2g, decompressed %.2g (f32 KV); fp8 KV %.2g / %.2g\n", variant, a.rel(),
                d.rel(), a8.rel(), d8.rel());
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace pagoda
