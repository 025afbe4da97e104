#include "model/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/quantize_weights.h"
#include "model/reference_forward.h"
#include "support/test_paths.h"

namespace pagoda {
namespace {

struct Expected {
  DType type;
  std::vector<int64_t> ne;
};

// Every tensor llama.cpp expects for the spec, with its type and shape.
std::map<std::string, Expected> ExpectedTensors(const RandomModelSpec& s, int64_t n_vocab) {
  const int64_t hd = s.head_dim ? s.head_dim : s.n_embd / s.n_head;
  const int64_t q = s.n_head * hd, kv = s.n_head_kv * hd;
  const DType w = s.weight_type, f32 = DType::kF32;
  std::map<std::string, Expected> e;
  e["token_embd.weight"] = {w, {s.n_embd, n_vocab}};
  e["output_norm.weight"] = {f32, {s.n_embd}};
  if (!s.tied_output) e["output.weight"] = {s.output_type.value_or(w), {s.n_embd, n_vocab}};
  if (!s.rope_freq_factors.empty()) e["rope_freqs.weight"] = {f32, {hd / 2}};
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    e[b + "attn_norm.weight"] = {f32, {s.n_embd}};
    e[b + "attn_q.weight"] = {w, {s.n_embd, q}};
    e[b + "attn_k.weight"] = {w, {s.n_embd, kv}};
    e[b + "attn_v.weight"] = {w, {s.n_embd, kv}};
    e[b + "attn_output.weight"] = {w, {q, s.n_embd}};
    e[b + "ffn_norm.weight"] = {f32, {s.n_embd}};
    e[b + "ffn_gate.weight"] = {w, {s.n_embd, s.n_ff}};
    e[b + "ffn_up.weight"] = {w, {s.n_embd, s.n_ff}};
    e[b + "ffn_down.weight"] = {w, {s.n_ff, s.n_embd}};
    if (s.arch == "qwen2") {
      e[b + "attn_q.bias"] = {f32, {q}};
      e[b + "attn_k.bias"] = {f32, {kv}};
      e[b + "attn_v.bias"] = {f32, {kv}};
    }
    if (s.arch == "qwen3") {
      e[b + "attn_q_norm.weight"] = {f32, {hd}};
      e[b + "attn_k_norm.weight"] = {f32, {hd}};
    }
  }
  return e;
}

std::string TempPath(const std::string& name) {
  return (::pagoda::testing::TempDirForProcess() /
          ("pagoda_random_model_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::unique_ptr<GgufFile> WriteAndOpen(const RandomModelSpec& spec, const std::string& name) {
  const std::string path = TempPath(name);
  Status st = WriteRandomModel(spec, path);
  EXPECT_TRUE(st.ok()) << st.ToString();
  auto file = GgufFile::Open(path);
  std::filesystem::remove(path);  // the mapping stays valid
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  return file.ok() ? std::move(file).value() : nullptr;
}

void CheckTensors(const GgufFile& f, const RandomModelSpec& spec, int64_t n_vocab) {
  const auto expected = ExpectedTensors(spec, n_vocab);
  EXPECT_EQ(f.tensors().size(), expected.size());
  for (const auto& [name, e] : expected) {
    const GgufTensorInfo* t = f.FindTensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, e.type) << name;
    ASSERT_EQ(t->n_dims, int(e.ne.size())) << name;
    for (size_t d = 0; d < e.ne.size(); ++d) EXPECT_EQ(t->ne[d], e.ne[d]) << name << " dim " << d;
  }
}

void ExpectInt(const GgufMetadata& md, const std::string& key, int64_t want) {
  auto v = md.GetInt(key);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, want) << key;
}

RandomModelSpec SmallSpec(const std::string& arch) {
  RandomModelSpec s;
  s.arch = arch;
  s.n_embd = 64;
  s.n_layer = 2;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.n_ff = 96;
  s.n_vocab = 300;
  s.n_ctx = 512;
  s.seed = 7;
  return s;
}

TEST(RandomModelTest, LlamaHasLlamaCppTensorsAndMetadata) {
  RandomModelSpec s = SmallSpec("llama");
  s.weight_type = DType::kF16;
  s.output_type = DType::kF32;
  s.rope_freq_factors = {1, 1, 2, 4, 8, 8, 8, 8};
  s.rope_base = 500000.0f;
  auto f = WriteAndOpen(s, "llama.gguf");
  ASSERT_NE(f, nullptr);
  CheckTensors(*f, s, 300);
  const GgufMetadata& md = f->metadata();
  EXPECT_EQ(*md.GetString("general.architecture"), "llama");
  ExpectInt(md, "general.file_type", 1);
  EXPECT_FALSE(md.Has("general.quantization_version"));
  ExpectInt(md, "llama.context_length", 512);
  ExpectInt(md, "llama.embedding_length", 64);
  ExpectInt(md, "llama.block_count", 2);
  ExpectInt(md, "llama.feed_forward_length", 96);
  ExpectInt(md, "llama.attention.head_count", 4);
  ExpectInt(md, "llama.attention.head_count_kv", 2);
  ExpectInt(md, "llama.rope.dimension_count", 16);
  ExpectInt(md, "llama.vocab_size", 300);
  EXPECT_FALSE(md.Has("llama.attention.key_length"));
  EXPECT_DOUBLE_EQ(*md.GetFloat("llama.rope.freq_base"), 500000.0);
  EXPECT_NEAR(*md.GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-10);
  EXPECT_EQ(md.GetStringArray("tokenizer.ggml.tokens")->size(), 300u);

  auto freqs = f->GetTensor("rope_freqs.weight");
  ASSERT_TRUE(freqs.ok());
  const float* fv = static_cast<const float*>(freqs->data);
  for (size_t i = 0; i < s.rope_freq_factors.size(); ++i) EXPECT_EQ(fv[i], s.rope_freq_factors[i]);
}

TEST(RandomModelTest, Qwen2HasBiasesAndTiedOutput) {
  RandomModelSpec s = SmallSpec("qwen2");
  s.tied_output = true;
  s.rms_eps = 1e-6f;
  s.weight_type = DType::kQ8_0;
  auto f = WriteAndOpen(s, "qwen2.gguf");
  ASSERT_NE(f, nullptr);
  CheckTensors(*f, s, 300);
  EXPECT_EQ(f->FindTensor("output.weight"), nullptr);
  ExpectInt(f->metadata(), "general.file_type", 7);
  ExpectInt(f->metadata(), "general.quantization_version", 2);
  ExpectInt(f->metadata(), "qwen2.block_count", 2);
}

TEST(RandomModelTest, Qwen3HasQkNormsAndKeyLength) {
  RandomModelSpec s = SmallSpec("qwen3");
  s.head_dim = 32;  // != n_embd / n_head = 16
  s.weight_type = DType::kF32;
  auto f = WriteAndOpen(s, "qwen3.gguf");
  ASSERT_NE(f, nullptr);
  CheckTensors(*f, s, 300);
  ExpectInt(f->metadata(), "qwen3.attention.key_length", 32);
  ExpectInt(f->metadata(), "qwen3.attention.value_length", 32);
  ExpectInt(f->metadata(), "qwen3.rope.dimension_count", 32);
  ExpectInt(f->metadata(), "general.file_type", 0);
}

TEST(RandomModelTest, KQuantWeightsRoundTrip) {
  RandomModelSpec s = SmallSpec("llama");
  s.n_embd = 256;
  s.n_ff = 512;
  s.n_head = 4;
  s.weight_type = DType::kQ4_K;
  s.output_type = DType::kQ6_K;
  auto f = WriteAndOpen(s, "q4k.gguf");
  ASSERT_NE(f, nullptr);
  CheckTensors(*f, s, 300);
  ExpectInt(f->metadata(), "general.file_type", 14);
}

// llama-quantize's Q4_K_M mix over 16 layers: attn_v and ffn_down are Q6_K
// in layers 0, 1 (first eighth), 14, 15 (last eighth) and 4, 7, 10, 13
// (every third between), as its use_more_bits picks them; Q4_K elsewhere.
TEST(RandomModelTest, QuantizeMixMGivesTheMoreBitsLayersQ6K) {
  RandomModelSpec s = SmallSpec("llama");
  s.n_embd = 256;
  s.n_ff = 512;
  s.n_head = 4;
  s.n_layer = 16;
  s.weight_type = DType::kQ4_K;
  s.output_type = DType::kQ6_K;
  s.more_bits_mix = true;
  auto f = WriteAndOpen(s, "q4km.gguf");
  ASSERT_NE(f, nullptr);
  const std::vector<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int l = 0; l < 16; ++l) {
    const bool q6 = std::find(more.begin(), more.end(), l) != more.end();
    const std::string b = "blk." + std::to_string(l) + ".";
    for (const char* name : {"attn_v.weight", "ffn_down.weight"}) {
      const GgufTensorInfo* t = f->FindTensor(b + name);
      ASSERT_NE(t, nullptr) << b << name;
      EXPECT_EQ(t->type, q6 ? DType::kQ6_K : DType::kQ4_K) << b << name;
    }
    for (const char* name : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"}) {
      EXPECT_EQ(f->FindTensor(b + name)->type, DType::kQ4_K) << b << name;
    }
  }
  EXPECT_EQ(f->FindTensor("output.weight")->type, DType::kQ6_K);
  ExpectInt(f->metadata(), "general.file_type", 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
}

TEST(RandomModelTest, WeightsHaveIntendedStatistics) {
  RandomModelSpec s = SmallSpec("llama");
  s.n_embd = 128;
  s.weight_type = DType::kF32;
  auto f = WriteAndOpen(s, "stats.gguf");
  ASSERT_NE(f, nullptr);
  auto stats = [&](const char* name, double* mean, double* sd) {
    const GgufTensorInfo* t = f->FindTensor(name);
    const float* v = static_cast<const float*>(f->View(*t).data);
    const int64_t n = t->nbytes / 4;
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) s1 += v[i], s2 += double(v[i]) * v[i];
    *mean = s1 / n;
    *sd = std::sqrt(s2 / n - *mean * *mean);
  };
  double mean, sd;
  stats("token_embd.weight", &mean, &sd);
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(sd, 1.0, 0.02);
  stats("blk.0.attn_q.weight", &mean, &sd);
  EXPECT_NEAR(sd, 0.25, 0.01);  // fan-in 128: the reference sigma
  stats("blk.1.ffn_norm.weight", &mean, &sd);
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(sd, 0.1, 0.03);
}

TEST(RandomModelTest, EveryWeightTypeEncodesTheSameValues) {
  RandomModelSpec s = SmallSpec("llama");
  s.n_embd = 256;
  s.n_vocab = 1024;  // token_embd: 256K elements, large enough for the threaded path
  s.weight_type = DType::kF32;
  auto f32 = BuildRandomModel(s);
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  const std::vector<uint8_t> f32_bytes = f32->Serialize();
  auto f32_parsed = ParseGguf(f32_bytes.data(), f32_bytes.size());
  ASSERT_TRUE(f32_parsed.ok());
  for (DType t : {DType::kF16, DType::kBF16, DType::kQ8_0}) {
    s.weight_type = t;
    auto m = BuildRandomModel(s);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const std::vector<uint8_t> bytes = m->Serialize();
    auto parsed = ParseGguf(bytes.data(), bytes.size());
    ASSERT_TRUE(parsed.ok());
    for (const char* name : {"token_embd.weight", "blk.1.ffn_down.weight"}) {
      auto find = [&](const GgufParsed& p) {
        return *std::find_if(p.tensors.begin(), p.tensors.end(),
                             [&](const GgufTensorInfo& i) { return i.name == name; });
      };
      const GgufTensorInfo a = find(*f32_parsed), b = find(*parsed);
      const float* src = reinterpret_cast<const float*>(f32_bytes.data() + f32_parsed->data_offset + a.offset);
      std::vector<uint8_t> want(b.nbytes);
      const int64_t n = a.ne[0], rows = a.nbytes / 4 / n, row_bytes = RowBytes(t, n);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_TRUE(kernels::QuantizeWeightRow(t, src + r * n, want.data() + r * row_bytes, n).ok());
      }
      EXPECT_EQ(0, std::memcmp(want.data(), bytes.data() + parsed->data_offset + b.offset, b.nbytes))
          << name << " as " << DTypeName(t);
    }
  }
}

TEST(RandomModelTest, SameSeedGivesIdenticalBytesWhateverTheThreadCount) {
  RandomModelSpec s = SmallSpec("qwen2");
  s.n_embd = 256;
  s.n_ff = 512;
  s.n_threads = 1;
  auto a = BuildRandomModel(s);
  s.n_threads = 3;
  auto b = BuildRandomModel(s);
  s.seed = 8;
  auto c = BuildRandomModel(s);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->Serialize(), b->Serialize());
  EXPECT_NE(a->Serialize(), c->Serialize());
}

TEST(RandomModelTest, CopiesTokenizerMetadataFromAnotherGguf) {
  const std::string vocab_path = std::string(PAGODA_TESTDATA_DIR) + "/ggml-vocab-llama-spm.gguf";
  if (!std::filesystem::exists(vocab_path)) GTEST_SKIP() << vocab_path << " not found";
  auto vocab = GgufFile::Open(vocab_path);
  ASSERT_TRUE(vocab.ok()) << vocab.status().ToString();
  RandomModelSpec s = SmallSpec("llama");
  s.n_vocab = 0;  // from the tokenizer
  s.tokenizer = (*vocab)->metadata();
  auto f = WriteAndOpen(s, "spm.gguf");
  ASSERT_NE(f, nullptr);
  CheckTensors(*f, s, 32000);
  ExpectInt(f->metadata(), "llama.vocab_size", 32000);
  // Only tokenizer.* keys are copied: the vocab file's llama.* sizes are not.
  ExpectInt(f->metadata(), "llama.embedding_length", 64);
  for (const auto& [key, value] : (*vocab)->metadata().entries()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    const GgufValue* got = f->metadata().Find(key);
    ASSERT_NE(got, nullptr) << key;
    EXPECT_EQ(got->ToDisplayString(), value.ToDisplayString()) << key;
  }
  s.n_vocab = 31999;
  EXPECT_EQ(BuildRandomModel(s).status().code(), StatusCode::kInvalidArgument);
}

TEST(RandomModelTest, RejectsInvalidSpecs) {
  auto bad = [](auto mutate) {
    RandomModelSpec s = SmallSpec("llama");
    mutate(s);
    return ValidateRandomModelSpec(s);
  };
  EXPECT_FALSE(bad([](RandomModelSpec& s) { s.arch = "gpt2"; }).ok());
  EXPECT_FALSE(bad([](RandomModelSpec& s) { s.n_head_kv = 3; }).ok());
  EXPECT_FALSE(bad([](RandomModelSpec& s) { s.n_embd = 66; }).ok());  // not a multiple of n_head
  EXPECT_FALSE(bad([](RandomModelSpec& s) { s.n_vocab = 100; }).ok());  // too small to synthesise
  EXPECT_FALSE(bad([](RandomModelSpec& s) { s.rope_freq_factors = {1, 2}; }).ok());
  EXPECT_FALSE(bad([](RandomModelSpec& s) { s.weight_type = DType::kQ8_K; }).ok());
  Status st = bad([](RandomModelSpec& s) { s.weight_type = DType::kQ4_K; });  // 64 % 256 != 0
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("block size"), std::string::npos) << st.message();
  EXPECT_TRUE(bad([](RandomModelSpec&) {}).ok());
}


// ---- MoE / MLA ---------------------------------------------------------------

RandomModelSpec MoeSpec(const std::string& arch) {
  RandomModelSpec s = SmallSpec(arch);
  s.n_expert = 4;
  s.n_expert_used = 2;
  s.n_ff_exp = 32;
  if (arch == "qwen2moe") s.n_ff_shexp = 64;
  if (arch == "deepseek2" || arch == "glm4moe") {
    s.n_layer = 3;
    s.n_layer_dense_lead = 1;
    s.n_expert_shared = 1;
  }
  if (arch == "deepseek2") {
    s.q_lora_rank = 32;
    s.kv_lora_rank = 32;
    s.qk_rope_dim = 8;
    s.qk_nope_dim = 16;
    s.v_head_dim = 16;
  }
  return s;
}

const GgufTensorInfo* Tensor(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  return t;
}

void ExpectShape(const GgufFile& f, const std::string& name, std::vector<int64_t> ne, DType type) {
  const GgufTensorInfo* t = Tensor(f, name);
  if (!t) return;
  EXPECT_EQ(t->type, type) << name;
  ASSERT_EQ(t->n_dims, int(ne.size())) << name;
  for (size_t d = 0; d < ne.size(); ++d) EXPECT_EQ(t->ne[d], ne[d]) << name << " dim " << d;
}

TEST(RandomModelTest, Qwen2MoeHasExpertsAndGatedSharedExpert) {
  RandomModelSpec s = MoeSpec("qwen2moe");
  s.weight_type = DType::kF32;
  s.expert_type = DType::kQ8_0;
  auto f = WriteAndOpen(s, "qwen2moe.gguf");
  ASSERT_NE(f, nullptr);
  const DType f32 = DType::kF32, q8 = DType::kQ8_0;
  ExpectShape(*f, "blk.1.ffn_gate_inp.weight", {64, 4}, f32);
  ExpectShape(*f, "blk.1.ffn_gate_exps.weight", {64, 32, 4}, q8);
  ExpectShape(*f, "blk.1.ffn_up_exps.weight", {64, 32, 4}, q8);
  ExpectShape(*f, "blk.1.ffn_down_exps.weight", {32, 64, 4}, q8);
  ExpectShape(*f, "blk.1.ffn_gate_inp_shexp.weight", {64}, f32);
  ExpectShape(*f, "blk.1.ffn_down_shexp.weight", {64, 64}, f32);
  ExpectShape(*f, "blk.0.attn_q.bias", {64}, f32);
  EXPECT_EQ(f->FindTensor("blk.0.ffn_gate.weight"), nullptr);
  const GgufMetadata& md = f->metadata();
  ExpectInt(md, "qwen2moe.expert_count", 4);
  ExpectInt(md, "qwen2moe.expert_used_count", 2);
  ExpectInt(md, "qwen2moe.expert_feed_forward_length", 32);
  ExpectInt(md, "qwen2moe.expert_shared_feed_forward_length", 64);
  ExpectInt(md, "general.file_type", 7);  // the experts' type
  EXPECT_FALSE(md.Has("qwen2moe.expert_weights_norm"));
}

TEST(RandomModelTest, LlamaWithExpertsIsMixtralShaped) {
  RandomModelSpec s = MoeSpec("llama");
  s.weight_type = DType::kF16;
  auto f = WriteAndOpen(s, "mixtral.gguf");
  ASSERT_NE(f, nullptr);
  ExpectInt(f->metadata(), "llama.feed_forward_length", 32);  // Mixtral sizes experts by it
  EXPECT_FALSE(f->metadata().Has("llama.expert_feed_forward_length"));
  ExpectShape(*f, "blk.0.ffn_gate_exps.weight", {64, 32, 4}, DType::kF16);
}

TEST(RandomModelTest, Qwen3MoeMergedGateUpHoldsTheGateAndUpRows) {
  RandomModelSpec s = MoeSpec("qwen3moe");
  s.weight_type = DType::kF32;
  auto split = WriteAndOpen(s, "qwen3moe_split.gguf");
  s.merged_gate_up_exps = true;
  auto merged = WriteAndOpen(s, "qwen3moe_merged.gguf");
  ASSERT_TRUE(split && merged);
  ExpectShape(*merged, "blk.0.ffn_gate_up_exps.weight", {64, 64, 4}, DType::kF32);
  EXPECT_EQ(merged->FindTensor("blk.0.ffn_gate_exps.weight"), nullptr);
  auto data = [](const GgufFile& f, const char* name) {
    return static_cast<const float*>(f.View(*f.FindTensor(name)).data);
  };
  const float* gu = data(*merged, "blk.0.ffn_gate_up_exps.weight");
  const float* g = data(*split, "blk.0.ffn_gate_exps.weight");
  const float* u = data(*split, "blk.0.ffn_up_exps.weight");
  const int64_t n = 64, f = 32;
  for (int64_t e = 0; e < 4; ++e) {
    EXPECT_EQ(0, std::memcmp(gu + e * 2 * f * n, g + e * f * n, f * n * 4)) << "expert " << e << " gate";
    EXPECT_EQ(0, std::memcmp(gu + (e * 2 + 1) * f * n, u + e * f * n, f * n * 4)) << "expert " << e << " up";
  }
}

TEST(RandomModelTest, Deepseek2LayoutsHoldTheSameNumbers) {
  RandomModelSpec s = MoeSpec("deepseek2");
  s.weight_type = DType::kF32;
  s.mla_split_kv_b = false;
  auto early = WriteAndOpen(s, "ds2_early.gguf");
  s.mla_split_kv_b = true;
  auto current = WriteAndOpen(s, "ds2_current.gguf");
  ASSERT_TRUE(early && current);
  const DType f32 = DType::kF32;
  ExpectShape(*early, "blk.0.attn_kv_b.weight", {32, 4 * (16 + 16)}, f32);
  ExpectShape(*current, "blk.0.attn_k_b.weight", {16, 32, 4}, f32);
  ExpectShape(*current, "blk.0.attn_v_b.weight", {32, 16, 4}, f32);
  ExpectShape(*current, "blk.0.attn_q_a.weight", {64, 32}, f32);
  ExpectShape(*current, "blk.0.attn_q_b.weight", {32, 4 * 24}, f32);
  ExpectShape(*current, "blk.0.attn_kv_a_mqa.weight", {64, 32 + 8}, f32);
  ExpectShape(*current, "blk.0.attn_output.weight", {4 * 16, 64}, f32);
  ExpectShape(*current, "blk.0.ffn_gate.weight", {64, 96}, f32);  // leading dense
  ExpectShape(*current, "blk.1.ffn_gate_shexp.weight", {64, 32}, f32);
  const GgufMetadata& me = early->metadata();
  const GgufMetadata& mc = current->metadata();
  ExpectInt(me, "deepseek2.attention.head_count_kv", 4);
  ExpectInt(me, "deepseek2.attention.key_length", 24);
  ExpectInt(me, "deepseek2.attention.value_length", 16);
  EXPECT_FALSE(me.Has("deepseek2.attention.key_length_mla"));
  ExpectInt(mc, "deepseek2.attention.head_count_kv", 1);
  ExpectInt(mc, "deepseek2.attention.key_length", 40);
  ExpectInt(mc, "deepseek2.attention.value_length", 32);
  ExpectInt(mc, "deepseek2.attention.key_length_mla", 24);
  ExpectInt(mc, "deepseek2.attention.value_length_mla", 16);
  ExpectInt(mc, "deepseek2.attention.q_lora_rank", 32);
  ExpectInt(mc, "deepseek2.attention.kv_lora_rank", 32);
  ExpectInt(mc, "deepseek2.rope.dimension_count", 8);
  ExpectInt(mc, "deepseek2.leading_dense_block_count", 1);
  ExpectInt(mc, "deepseek2.expert_shared_count", 1);
  // k_b[h] is W_UK[h] transposed, v_b[h] is W_UV[h]: the same floats.
  auto data = [](const GgufFile& f, const char* name) {
    return static_cast<const float*>(f.View(*f.FindTensor(name)).data);
  };
  const float* kv_b = data(*early, "blk.2.attn_kv_b.weight");
  const float* k_b = data(*current, "blk.2.attn_k_b.weight");
  const float* v_b = data(*current, "blk.2.attn_v_b.weight");
  const int64_t L = 32, nope = 16, v = 16;
  for (int64_t h = 0; h < 4; ++h) {
    for (int64_t c = 0; c < L; ++c) {
      for (int64_t i = 0; i < nope; ++i) ASSERT_EQ(k_b[(h * L + c) * nope + i], kv_b[(h * (nope + v) + i) * L + c]);
    }
    EXPECT_EQ(0, std::memcmp(v_b + h * v * L, kv_b + (h * (nope + v) + nope) * L, v * L * 4));
  }
  // And the reference forward agrees on the logits.
  const testing::ReferenceModel re(*early), rc(*current);
  const std::vector<int32_t> tokens = {1, 17, 250, 3, 99, 42, 7};
  const auto le = re.Forward(tokens), lc = rc.Forward(tokens);
  for (size_t t = 0; t < tokens.size(); ++t) {
    for (size_t i = 0; i < le[t].size(); ++i) ASSERT_NEAR(le[t][i], lc[t][i], 1e-9 * (1 + std::abs(le[t][i])));
  }
}

TEST(RandomModelTest, Glm4MoeHasPostAttentionNormPartialRopeAndNextN) {
  RandomModelSpec s = MoeSpec("glm4moe");
  s.qk_norm = true;
  s.nextn_predict_layers = 1;
  s.exp_probs_b = true;
  s.weight_type = DType::kF32;
  auto f = WriteAndOpen(s, "glm4moe.gguf");
  ASSERT_NE(f, nullptr);
  const DType f32 = DType::kF32;
  ExpectShape(*f, "blk.0.post_attention_norm.weight", {64}, f32);
  EXPECT_EQ(f->FindTensor("blk.0.ffn_norm.weight"), nullptr);
  ExpectShape(*f, "blk.1.attn_q_norm.weight", {16}, f32);
  ExpectShape(*f, "blk.1.attn_k.bias", {32}, f32);
  ExpectShape(*f, "blk.1.exp_probs_b.bias", {4}, f32);
  ExpectShape(*f, "blk.2.nextn.eh_proj.weight", {128, 64}, f32);
  ExpectShape(*f, "blk.2.nextn.embed_tokens.weight", {64, 300}, f32);
  ExpectShape(*f, "blk.2.nextn.shared_head_head.weight", {64, 300}, f32);
  ExpectShape(*f, "blk.2.nextn.enorm.weight", {64}, f32);
  ExpectShape(*f, "blk.2.ffn_gate_exps.weight", {64, 32, 4}, f32);  // a whole block besides
  EXPECT_EQ(f->FindTensor("blk.1.nextn.eh_proj.weight"), nullptr);
  const GgufMetadata& md = f->metadata();
  ExpectInt(md, "glm4moe.rope.dimension_count", 8);  // head_dim / 2
  ExpectInt(md, "glm4moe.nextn_predict_layers", 1);
  ExpectInt(md, "glm4moe.block_count", 3);
  ExpectInt(md, "glm4moe.expert_gating_func", 2);
}

TEST(RandomModelTest, KQuantFallbackForShortMlaRows) {
  RandomModelSpec s = MoeSpec("deepseek2");
  s.n_embd = 256;
  s.n_ff = 256;
  s.n_ff_exp = 256;
  s.kv_lora_rank = 256;
  s.q_lora_rank = 0;
  s.weight_type = DType::kQ4_K;
  auto f = WriteAndOpen(s, "ds2_q4k.gguf");
  ASSERT_NE(f, nullptr);
  // Rows of 16 (qk_nope_dim): Q4_K falls back to Q5_0, whose block of 32
  // does not fit either, then to F16.
  EXPECT_EQ(Tensor(*f, "blk.0.attn_k_b.weight")->type, DType::kF16);
  EXPECT_EQ(Tensor(*f, "blk.0.attn_v_b.weight")->type, DType::kQ4_K);
  EXPECT_EQ(Tensor(*f, "blk.0.attn_output.weight")->type, DType::kQ5_0);  // rows of 64
  ExpectShape(*f, "blk.0.attn_q.weight", {256, 4 * 24}, DType::kQ4_K);
}

TEST(RandomModelTest, StreamedFileEqualsTheInMemoryBuild) {
  for (const char* arch : {"llama", "qwen2moe", "deepseek2", "glm4moe"}) {
    RandomModelSpec s = MoeSpec(arch);
    if (std::string(arch) == "llama") s = SmallSpec("llama");
    s.weight_type = DType::kQ8_0;
    s.n_threads = 2;
    auto built = BuildRandomModel(s);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    const std::string path = TempPath(std::string("stream_") + arch + ".gguf");
    ASSERT_TRUE(WriteRandomModel(s, path).ok());
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    EXPECT_EQ(file, built->Serialize()) << arch;
  }
}

TEST(RandomModelTest, RejectsInconsistentMoeAndMlaSpecs) {
  auto bad = [](const std::string& arch, auto mutate) {
    RandomModelSpec s = MoeSpec(arch);
    mutate(s);
    return ValidateRandomModelSpec(s);
  };
  auto message = [](const Status& st) { return st.message(); };
  EXPECT_TRUE(bad("deepseek2", [](RandomModelSpec&) {}).ok());
  EXPECT_TRUE(bad("qwen2moe", [](RandomModelSpec&) {}).ok());
  EXPECT_TRUE(bad("glm4moe", [](RandomModelSpec&) {}).ok());
  EXPECT_FALSE(bad("qwen3moe", [](RandomModelSpec& s) { s.n_expert = 0; s.n_expert_used = 0; s.n_ff_exp = 0; }).ok());
  EXPECT_FALSE(bad("qwen3moe", [](RandomModelSpec& s) { s.n_expert_used = 5; }).ok());
  EXPECT_FALSE(bad("qwen3moe", [](RandomModelSpec& s) { s.n_ff_exp = 0; }).ok());
  EXPECT_FALSE(bad("qwen3moe", [](RandomModelSpec& s) { s.expert_weights_norm = true; }).ok());
  EXPECT_FALSE(bad("qwen3moe", [](RandomModelSpec& s) { s.exp_probs_b = true; }).ok());
  EXPECT_FALSE(bad("qwen3moe", [](RandomModelSpec& s) { s.n_expert_shared = 1; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.n_ff_shexp = 64; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.n_layer_dense_lead = 3; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.expert_gating_func = 3; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.n_expert_groups = 3; s.n_group_used = 1; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.n_expert_groups = 4; s.n_group_used = 1; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.n_expert_groups = 2; s.n_group_used = 3; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.n_group_used = 1; }).ok());
  EXPECT_TRUE(bad("deepseek2", [](RandomModelSpec& s) { s.n_expert_groups = 2; s.n_group_used = 1; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.kv_lora_rank = 0; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.qk_rope_dim = 7; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.head_dim = 32; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.rope_scaling_orig_ctx = 64; }).ok());
  EXPECT_FALSE(bad("deepseek2", [](RandomModelSpec& s) { s.rope_scaling_factor = 4; }).ok());  // no original ctx
  EXPECT_TRUE(bad("deepseek2", [](RandomModelSpec& s) {
                s.rope_scaling_factor = 4, s.rope_scaling_orig_ctx = 64, s.yarn_log_multiplier = 0.1f;
              }).ok());
  EXPECT_FALSE(bad("qwen3moe", [](RandomModelSpec& s) { s.kv_lora_rank = 32; }).ok());
  EXPECT_FALSE(bad("qwen3moe", [](RandomModelSpec& s) { s.rope_scaling_factor = 4; s.rope_scaling_orig_ctx = 64; }).ok());
  EXPECT_FALSE(bad("qwen2moe", [](RandomModelSpec& s) { s.nextn_predict_layers = 1; }).ok());
  EXPECT_FALSE(bad("llama", [](RandomModelSpec& s) { s.qk_norm = true; }).ok());
  EXPECT_FALSE(bad("qwen3", [](RandomModelSpec& s) { s.n_expert_used = 0; }).ok());  // qwen3 has no experts
  const Status st = bad("qwen3moe", [](RandomModelSpec& s) { s.expert_type = DType::kQ4_K; });  // 64 % 256
  EXPECT_NE(message(st).find("expert type"), std::string::npos) << message(st);
  RandomModelSpec dense = SmallSpec("llama");
  dense.n_expert_used = 2;  // experts fields without experts
  EXPECT_FALSE(ValidateRandomModelSpec(dense).ok());
}

TEST(RandomModelTest, PresetsHaveTheRealShapes) {
  RandomModelSpec s;
  ASSERT_TRUE(ApplyRandomModelPreset("qwen3-30b-a3b", s).ok());
  EXPECT_EQ(s.arch, "qwen3moe");
  EXPECT_EQ(s.n_expert, 128);
  s.weight_type = DType::kQ4_K;
  EXPECT_TRUE(ValidateRandomModelSpec(s).ok());
  RandomModelSpec k;
  ASSERT_TRUE(ApplyRandomModelPreset("kanana-2-30b-a3b", k).ok());
  k.weight_type = DType::kQ4_K;
  EXPECT_TRUE(ValidateRandomModelSpec(k).ok()) << ValidateRandomModelSpec(k).message();
  RandomModelSpec q;
  ASSERT_TRUE(ApplyRandomModelPreset("qwen2moe-a2.7b", q).ok());
  q.weight_type = DType::kQ4_0;
  EXPECT_TRUE(ValidateRandomModelSpec(q).ok());
  EXPECT_FALSE(ApplyRandomModelPreset("gpt-5", q).ok());
}

}  // namespace
}  // namespace pagoda
