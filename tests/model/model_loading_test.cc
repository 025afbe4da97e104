// Loading bad models and feeding bad batches: every failure is a Status that
// names what is wrong (file, key, tensor), never a crash.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "model/model_registry.h"
#include "model/random_model.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return (::pagoda::testing::TempDirForProcess() / ("pagoda_loading_" + name + ".gguf")).string();
}

RandomModelSpec TinySpec(const std::string& arch = "llama") {
  RandomModelSpec spec;
  spec.arch = arch;
  spec.n_embd = 64;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 96;
  spec.n_vocab = 300;
  spec.weight_type = DType::kF32;
  return spec;
}

// Writes the tiny model with its metadata edited and tensors filtered or
// replaced (return false from `keep` to drop a tensor; `reshape` may change ne).
struct Edit {
  std::function<void(GgufMetadata&)> metadata;
  std::function<bool(const std::string&)> keep;
  std::function<void(const std::string&, std::vector<int64_t>&)> reshape;
};

std::string WriteEdited(const std::string& name, const RandomModelSpec& spec, const Edit& edit) {
  const std::string base = TempPath(name + "_base");
  EXPECT_TRUE(WriteRandomModel(spec, base).ok());
  auto src = GgufFile::Open(base);
  EXPECT_TRUE(src.ok());
  GgufWriter w;
  for (const auto& [key, value] : (*src)->metadata().entries()) w.metadata().Set(key, value);
  if (edit.metadata) edit.metadata(w.metadata());
  for (const GgufTensorInfo& info : (*src)->tensors()) {
    if (edit.keep && !edit.keep(info.name)) continue;
    std::vector<int64_t> ne(info.ne.begin(), info.ne.begin() + info.n_dims);
    const std::vector<int64_t> old_ne = ne;
    if (edit.reshape) edit.reshape(info.name, ne);
    const TensorView v = (*src)->View(info);
    if (ne == old_ne) {
      EXPECT_TRUE(w.AddTensor(info.name, info.type, ne, v.data, v.nbytes).ok());
    } else {
      int64_t n = 1;
      for (int64_t d : ne) n *= d;
      std::vector<float> zeros(n, 0.0f);  // reshaped tensors are F32 here
      EXPECT_TRUE(w.AddTensor(info.name, DType::kF32, ne, zeros.data(), n * sizeof(float)).ok());
    }
  }
  const std::string path = TempPath(name);
  EXPECT_TRUE(w.Write(path).ok());
  std::filesystem::remove(base);
  return path;
}

Status LoadStatus(const std::string& path) {
  ThreadPool pool(1);
  auto model = LoadModel(path, pool);
  std::filesystem::remove(path);
  return model.ok() ? Status::Ok() : model.status();
}

TEST(ModelLoadingTest, RegistryKnowsTheArchitectures) {
  const auto names = ArchRegistry::Builtin().Names();
  EXPECT_EQ(names, (std::vector<std::string>{"bert", "deepseek2", "glm4moe", "llama", "qwen2", "qwen2moe", "qwen3",
                                              "qwen3moe"}));
}

RandomModelSpec TinyMoeSpec(const std::string& arch) {
  RandomModelSpec spec = TinySpec(arch);
  spec.n_expert = 4;
  spec.n_expert_used = 2;
  spec.n_ff_exp = 64;
  if (arch == "qwen2moe") spec.n_ff_shexp = 64;
  if (arch == "deepseek2") {
    spec.n_layer_dense_lead = 1;
    spec.n_expert_shared = 1;
    spec.q_lora_rank = 32;
    spec.kv_lora_rank = 32;
    spec.qk_rope_dim = 16;
    spec.qk_nope_dim = 16;
    spec.v_head_dim = 16;
    spec.mla_split_kv_b = true;
  }
  return spec;
}

TEST(ModelLoadingTest, LoadsEveryMoeArchitecture) {
  for (const char* arch : {"llama", "qwen2moe", "qwen3moe", "deepseek2"}) {
    const std::string path = WriteEdited(std::string("ok_moe_") + arch, TinyMoeSpec(arch), {});
    EXPECT_TRUE(LoadStatus(path).ok()) << arch << ": " << LoadStatus(path).ToString();
  }
}

TEST(ModelLoadingTest, ExpertUsedCountAboveExpertCountIsNamed) {
  Edit e;
  e.metadata = [](GgufMetadata& md) { md.Set("qwen3moe.expert_used_count", uint32_t{5}); };
  const Status st = LoadStatus(WriteEdited("moe_used", TinyMoeSpec("qwen3moe"), e));
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("pagoda_loading_moe_used.gguf"));
  EXPECT_THAT(st.message(), HasSubstr("qwen3moe.expert_used_count"));
}

TEST(ModelLoadingTest, ExpertCountThatDisagreesWithTheTensorsIsNamed) {
  Edit e;
  e.metadata = [](GgufMetadata& md) { md.Set("qwen2moe.expert_count", uint32_t{6}); };
  const Status st = LoadStatus(WriteEdited("moe_count", TinyMoeSpec("qwen2moe"), e));
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("pagoda_loading_moe_count.gguf"));
  EXPECT_THAT(st.message(), HasSubstr("blk.0.ffn_gate_inp.weight"));
}

TEST(ModelLoadingTest, ExpertTensorOfTheWrongShapeIsNamed) {
  Edit e;
  e.reshape = [](const std::string& name, std::vector<int64_t>& ne) {
    if (name == "blk.1.ffn_down_exps.weight") ne[2] = 3;  // 3 experts instead of 4
  };
  const Status st = LoadStatus(WriteEdited("moe_shape", TinyMoeSpec("llama"), e));
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("blk.1.ffn_down_exps.weight"));
  EXPECT_THAT(st.message(), HasSubstr("[64, 64, 3]"));
}

TEST(ModelLoadingTest, MissingRouterIsNamed) {
  Edit e;
  e.keep = [](const std::string& name) { return name != "blk.1.ffn_gate_inp.weight"; };
  const Status st = LoadStatus(WriteEdited("moe_router", TinyMoeSpec("qwen3moe"), e));
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("pagoda_loading_moe_router.gguf"));
  EXPECT_THAT(st.message(), HasSubstr("blk.1.ffn_gate_inp.weight"));
}

TEST(ModelLoadingTest, MlaRankThatDisagreesWithTheTensorsIsNamed) {
  Edit e;
  // The split layout's key_length (kv_lora + rope) changes with the rank too.
  e.metadata = [](GgufMetadata& md) {
    md.Set("deepseek2.attention.kv_lora_rank", uint32_t{48});
    md.Set("deepseek2.attention.key_length", uint32_t{64});
    md.Set("deepseek2.attention.value_length", uint32_t{48});
  };
  const Status st = LoadStatus(WriteEdited("mla_rank", TinyMoeSpec("deepseek2"), e));
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("pagoda_loading_mla_rank.gguf"));
  EXPECT_THAT(st.message(), HasSubstr("blk.0.attn_kv_a_mqa.weight"));
}

TEST(ModelLoadingTest, MlaKeysOfTheWrongLayoutAreNamed) {
  Edit e;
  e.metadata = [](GgufMetadata& md) { md.Set("deepseek2.attention.head_count_kv", uint32_t{4}); };
  const Status st = LoadStatus(WriteEdited("mla_layout", TinyMoeSpec("deepseek2"), e));
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("head_count_kv 1"));
}

TEST(ModelLoadingTest, LoadsEveryDenseArchitecture) {
  for (const char* arch : {"llama", "qwen2", "qwen3"}) {
    const std::string path = WriteEdited(std::string("ok_") + arch, TinySpec(arch), {});
    EXPECT_TRUE(LoadStatus(path).ok()) << arch << ": " << LoadStatus(path).ToString();
  }
}

TEST(ModelLoadingTest, UnknownArchitectureIsNamed) {
  const std::string path = WriteEdited("unknown_arch", TinySpec(), {[](GgufMetadata& m) {
                                         m.Set("general.architecture", std::string("foo"));
                                       }});
  const Status st = LoadStatus(path);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(st.message(), HasSubstr("unknown architecture 'foo'"));
  EXPECT_THAT(st.message(), HasSubstr(path));
}

TEST(ModelLoadingTest, MissingTensorIsNamed) {
  const std::string path = WriteEdited("missing_tensor", TinySpec(),
                                       {nullptr, [](const std::string& n) { return n != "blk.1.ffn_up.weight"; }});
  const Status st = LoadStatus(path);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("'blk.1.ffn_up.weight'"));
  EXPECT_THAT(st.message(), HasSubstr(path));
}

TEST(ModelLoadingTest, MissingBiasOfQwen2IsNamed) {
  const std::string path = WriteEdited("missing_bias", TinySpec("qwen2"),
                                       {nullptr, [](const std::string& n) { return n != "blk.0.attn_k.bias"; }});
  const Status st = LoadStatus(path);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("'blk.0.attn_k.bias'"));
}

TEST(ModelLoadingTest, WrongShapeIsNamed) {
  const std::string path = WriteEdited(
      "wrong_shape", TinySpec(),
      {nullptr, nullptr, [](const std::string& n, std::vector<int64_t>& ne) {
         if (n == "blk.0.attn_k.weight") ne = {64, 48};
       }});
  const Status st = LoadStatus(path);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("'blk.0.attn_k.weight' has shape [64, 48], expected [64, 32]"));
}

TEST(ModelLoadingTest, WrongNormShapeIsNamed) {
  const std::string path = WriteEdited(
      "wrong_norm", TinySpec(),
      {nullptr, nullptr, [](const std::string& n, std::vector<int64_t>& ne) {
         if (n == "output_norm.weight") ne = {63};
       }});
  const Status st = LoadStatus(path);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("'output_norm.weight'"));
}

TEST(ModelLoadingTest, MissingHyperparameterIsNamed) {
  const std::string path = WriteEdited("missing_key", TinySpec(),
                                       {[](GgufMetadata& m) { m.Erase("llama.block_count"); }});
  const Status st = LoadStatus(path);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("'llama.block_count'"));
  EXPECT_THAT(st.message(), HasSubstr(path));
}

struct BadValue {
  const char* name;
  const char* key;
  GgufValue value;
  const char* message;
};

class BadHyperparameterTest : public ::testing::TestWithParam<BadValue> {};

TEST_P(BadHyperparameterTest, IsRejectedWithTheKey) {
  const BadValue& b = GetParam();
  const std::string path = WriteEdited(std::string("bad_") + b.name, TinySpec(),
                                       {[&](GgufMetadata& m) { m.Set(b.key, b.value); }});
  const Status st = LoadStatus(path);
  EXPECT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr(b.message)) << st.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Values, BadHyperparameterTest,
    ::testing::Values(
        BadValue{"head_count_0", "llama.attention.head_count", uint32_t{0}, "'llama.attention.head_count' = 0 is out of range"},
        BadValue{"kv_not_dividing", "llama.attention.head_count_kv", uint32_t{3}, "not a multiple of attention.head_count_kv 3"},
        BadValue{"kv_above_heads", "llama.attention.head_count_kv", uint32_t{8}, "'llama.attention.head_count_kv' = 8 is out of range"},
        BadValue{"embd_huge", "llama.embedding_length", uint64_t{1} << 40, "'llama.embedding_length'"},
        BadValue{"embd_not_dividing", "llama.embedding_length", uint32_t{66}, "not a multiple of attention.head_count"},
        BadValue{"layers_negative", "llama.block_count", int32_t{-1}, "'llama.block_count' = -1 is out of range"},
        BadValue{"ctx_0", "llama.context_length", uint32_t{0}, "'llama.context_length'"},
        BadValue{"rope_dim_odd", "llama.rope.dimension_count", uint32_t{15}, "odd"},
        BadValue{"rope_dim_big", "llama.rope.dimension_count", uint32_t{32}, "'llama.rope.dimension_count' = 32 is out of range"},
        BadValue{"eps_string", "llama.attention.layer_norm_rms_epsilon", std::string("x"), "'llama.attention.layer_norm_rms_epsilon'"},
        // A float64 epsilon that underflows to 0 as a float (found by the fuzzer).
        BadValue{"eps_underflow", "llama.attention.layer_norm_rms_epsilon", double{1e-50}, "must be in [1e-30, 1)"},
        BadValue{"longrope", "llama.rope.scaling.type", std::string("longrope"), "rope scaling type 'longrope' is not supported"}),
    [](const ::testing::TestParamInfo<BadValue>& info) { return std::string(info.param.name); });

// ---- Forward-time errors ------------------------------------------------------

class ModelForwardErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = WriteEdited("forward", TinySpec(), {});
    auto m = LoadModel(path, pool_);
    std::filesystem::remove(path);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    auto kv = ContiguousKvCache::Create(model_->kv_cache_spec(), 2, 8);
    ASSERT_TRUE(kv.ok());
    kv_ = std::move(kv).value();
    logits_.resize(8 * model_->n_vocab());
  }
  ThreadPool pool_{1};
  std::unique_ptr<Model> model_;
  std::unique_ptr<ContiguousKvCache> kv_;
  std::vector<float> logits_;
};

TEST_F(ModelForwardErrorTest, RejectsTokenOutsideVocabulary) {
  Batch b;
  b.Add(300, 0, 0, true);
  const Status st = model_->Forward(b, *kv_, logits_);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("id 300 outside the vocabulary"));
  EXPECT_EQ(kv_->SequenceLength(0), 0);
}

TEST_F(ModelForwardErrorTest, RejectsPositionGapAndBadSequence) {
  Batch b;
  b.Add(5, 1, 0, true);
  EXPECT_EQ(model_->Forward(b, *kv_, logits_).code(), StatusCode::kInvalidArgument);
  b.Clear();
  b.Add(5, 0, 2, true);
  EXPECT_EQ(model_->Forward(b, *kv_, logits_).code(), StatusCode::kInvalidArgument);
}

TEST_F(ModelForwardErrorTest, ReportsFullCacheAndKeepsState) {
  Batch b;
  for (int i = 0; i < 8; ++i) b.Add(5, i, 0, i == 7);
  ASSERT_TRUE(model_->Forward(b, *kv_, logits_).ok());
  b.Clear();
  b.Add(5, 8, 0, true);
  EXPECT_EQ(model_->Forward(b, *kv_, logits_).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(kv_->SequenceLength(0), 8);
}

TEST_F(ModelForwardErrorTest, RejectsSmallLogitsBufferAndForeignCache) {
  Batch b;
  b.Add(5, 0, 0, true);
  b.Add(6, 1, 0, true);
  std::vector<float> small(model_->n_vocab());
  EXPECT_EQ(model_->Forward(b, *kv_, small).code(), StatusCode::kInvalidArgument);
  KvCacheSpec other = model_->kv_cache_spec();
  other.layers.pop_back();
  auto kv = ContiguousKvCache::Create(other, 1, 8);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(model_->Forward(b, **kv, logits_).code(), StatusCode::kInvalidArgument);
}

TEST_F(ModelForwardErrorTest, BatchWithoutOutputsWritesTheCacheOnly) {
  Batch b;
  b.Add(5, 0, 0, false);
  b.Add(6, 1, 0, false);
  EXPECT_TRUE(model_->Forward(b, *kv_, std::span<float>()).ok());
  EXPECT_EQ(kv_->SequenceLength(0), 2);
}

TEST_F(ModelForwardErrorTest, AnInterruptedForwardStopsAndARerunGivesTheSameLogits) {
  Batch b;
  for (int p = 0; p < 4; ++p) b.Add(5 + p, p, 0, p == 3);
  ASSERT_TRUE(model_->Forward(b, *kv_, logits_).ok());
  const std::vector<float> reference(logits_.begin(), logits_.begin() + model_->n_vocab());
  // The same positions again, on a second sequence: interrupted, then rerun.
  Batch c;
  for (int p = 0; p < 4; ++p) c.Add(5 + p, p, 1, p == 3);
  std::atomic<bool> flag{true};
  model_->set_interrupt(&flag);
  std::fill(logits_.begin(), logits_.end(), -1.0f);
  EXPECT_EQ(model_->Forward(c, *kv_, logits_).code(), StatusCode::kDeadlineExceeded);
  flag = false;  // a flag that is down never stops it
  ASSERT_TRUE(model_->Forward(c, *kv_, logits_).ok());
  model_->set_interrupt(nullptr);
  for (int64_t i = 0; i < model_->n_vocab(); ++i) ASSERT_EQ(logits_[i], reference[i]) << i;
}

}  // namespace
}  // namespace pagoda
