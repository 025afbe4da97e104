// Writes a small seed corpus of valid GGUF files into the directory given as
// argv[1]: v2 and v3 files with several value and tensor types, and model
// files (llama MoE, qwen2moe, deepseek2 in both MLA layouts, glm4moe) with
// every key ReadModelConfig reads for them. Each model seed must be accepted
// by ReadModelConfig under its architecture's traits (else exit 1), so the
// fuzzer starts from inside the MoE / MLA / YaRN paths.
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_arch_traits.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/model_config.h"

using namespace pagoda;

namespace {

constexpr int64_t kEmbd = 32;
constexpr int64_t kVocab = 8;

// The hyperparameters every decoder has, under `a.`.
void SetCommon(GgufMetadata& md, const std::string& a, uint32_t layers, uint32_t heads, uint32_t heads_kv) {
  md.Set("general.architecture", a);
  md.Set(a + ".context_length", uint32_t{4096});
  md.Set(a + ".embedding_length", uint32_t(kEmbd));
  md.Set(a + ".block_count", layers);
  md.Set(a + ".feed_forward_length", uint32_t{64});
  md.Set(a + ".attention.head_count", heads);
  md.Set(a + ".attention.head_count_kv", heads_kv);
  md.Set(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
  md.Set(a + ".rope.freq_base", 10000.0f);
}

void SetExperts(GgufMetadata& md, const std::string& a, uint32_t n_expert, uint32_t n_used, uint32_t n_ff_exp) {
  md.Set(a + ".expert_count", n_expert);
  md.Set(a + ".expert_used_count", n_used);
  md.Set(a + ".expert_feed_forward_length", n_ff_exp);
}

// deepseek2 (DeepSeek-V3 / Kimi K2 shape): attn_k_b / attn_v_b layout with
// q LoRA, sigmoid gating, group-limited routing, YaRN.
void Deepseek2(GgufMetadata& md) {
  const std::string a = "deepseek2";
  SetCommon(md, a, 3, 4, 1);
  SetExperts(md, a, 8, 2, 16);
  md.Set(a + ".expert_shared_count", uint32_t{1});
  md.Set(a + ".leading_dense_block_count", uint32_t{1});
  md.Set(a + ".expert_weights_scale", 2.5f);
  md.Set(a + ".expert_weights_norm", true);
  md.Set(a + ".expert_gating_func", uint32_t{2});
  md.Set(a + ".expert_group_count", uint32_t{4});
  md.Set(a + ".expert_group_used_count", uint32_t{2});
  md.Set(a + ".attention.q_lora_rank", uint32_t{24});
  md.Set(a + ".attention.kv_lora_rank", uint32_t{16});
  md.Set(a + ".attention.key_length", uint32_t{24});  // kv_lora_rank + rope
  md.Set(a + ".attention.value_length", uint32_t{16});
  md.Set(a + ".attention.key_length_mla", uint32_t{20});  // nope 12 + rope 8
  md.Set(a + ".attention.value_length_mla", uint32_t{12});
  md.Set(a + ".rope.dimension_count", uint32_t{8});
  md.Set(a + ".rope.scaling.type", "yarn");
  md.Set(a + ".rope.scaling.factor", 40.0f);
  md.Set(a + ".rope.scaling.original_context_length", uint32_t{4096});
  md.Set(a + ".rope.scaling.yarn_log_multiplier", 0.1f);
  md.Set(a + ".rope.scaling.yarn_beta_fast", 32.0f);
  md.Set(a + ".rope.scaling.yarn_beta_slow", 1.0f);
}

// deepseek2 (DeepSeek-V2-Lite shape): attn_kv_b layout, no q LoRA, softmax
// gating by default.
void Deepseek2Lite(GgufMetadata& md) {
  const std::string a = "deepseek2";
  SetCommon(md, a, 2, 4, 4);
  SetExperts(md, a, 4, 2, 16);
  md.Set(a + ".expert_shared_count", uint32_t{2});
  md.Set(a + ".leading_dense_block_count", uint32_t{1});
  md.Set(a + ".expert_weights_scale", 1.0f);
  md.Set(a + ".attention.kv_lora_rank", uint32_t{16});
  md.Set(a + ".attention.key_length", uint32_t{20});
  md.Set(a + ".attention.value_length", uint32_t{12});
  md.Set(a + ".rope.dimension_count", uint32_t{8});
}

void Qwen2Moe(GgufMetadata& md) {
  const std::string a = "qwen2moe";
  SetCommon(md, a, 2, 4, 2);
  SetExperts(md, a, 8, 2, 16);
  md.Set(a + ".expert_shared_feed_forward_length", uint32_t{48});
  md.Set(a + ".rope.freq_base", 1000000.0f);
}

// glm4moe: a NextN block after the two that run, partial rotary dims.
void Glm4Moe(GgufMetadata& md) {
  const std::string a = "glm4moe";
  SetCommon(md, a, 3, 4, 2);
  SetExperts(md, a, 8, 2, 16);
  md.Set(a + ".expert_shared_count", uint32_t{1});
  md.Set(a + ".leading_dense_block_count", uint32_t{1});
  md.Set(a + ".expert_weights_scale", 1.0f);
  md.Set(a + ".expert_weights_norm", true);
  md.Set(a + ".expert_group_count", uint32_t{1});
  md.Set(a + ".expert_group_used_count", uint32_t{1});
  md.Set(a + ".nextn_predict_layers", uint32_t{1});
  md.Set(a + ".attention.key_length", uint32_t{16});
  md.Set(a + ".attention.value_length", uint32_t{16});
  md.Set(a + ".rope.dimension_count", uint32_t{8});
}

// llama with experts (Mixtral) and Llama-3.1 frequency factors.
void LlamaMoe(GgufMetadata& md) {
  const std::string a = "llama";
  SetCommon(md, a, 2, 4, 4);
  md.Set(a + ".expert_count", uint32_t{4});
  md.Set(a + ".expert_used_count", uint32_t{2});
  md.Set(a + ".rope.scaling.type", "linear");
  md.Set(a + ".rope.scaling.factor", 2.0f);
}

struct ModelSeed {
  const char* name;
  void (*fill)(GgufMetadata&);
  int traits;  // index into fuzz::kArchTraitsNames
  bool output;  // an untied output.weight
  bool rope_freqs;
};

const ModelSeed kModelSeeds[] = {
    {"deepseek2", Deepseek2, 4, true, false}, {"deepseek2_lite", Deepseek2Lite, 4, false, false},
    {"qwen2moe", Qwen2Moe, 2, true, false},   {"glm4moe", Glm4Moe, 5, true, false},
    {"llama_moe", LlamaMoe, 0, false, true},
};

bool WriteModelSeed(const std::string& dir, const ModelSeed& s) {
  GgufWriter w;
  s.fill(w.metadata());
  const std::vector<uint8_t> embd(kEmbd * kVocab * 2, 0);  // F16 zeros
  const float freqs[4] = {1.0f, 1.0f, 2.0f, 4.0f};
  if (!w.AddTensor("token_embd.weight", DType::kF16, {kEmbd, kVocab}, embd.data(), embd.size()).ok()) return false;
  if (s.output && !w.AddTensor("output.weight", DType::kF16, {kEmbd, kVocab}, embd.data(), embd.size()).ok()) {
    return false;
  }
  // [n_rot / 2]: every seed with frequency factors has 8 rotary dims.
  if (s.rope_freqs && !w.AddTensor("rope_freqs.weight", DType::kF32, {4}, freqs, sizeof freqs).ok()) {
    return false;
  }
  const std::vector<uint8_t> image = w.Serialize();
  auto file = GgufFile::FromMemory(s.name, image.data(), image.size());
  if (!file.ok()) {
    std::fprintf(stderr, "gguf_fuzz_seeds: %s: %s\n", s.name, file.status().ToString().c_str());
    return false;
  }
  const std::string arch(fuzz::kArchTraitsNames[s.traits]);
  auto config = ReadModelConfig(**file, arch, fuzz::ArchTraitsVariant(s.traits));
  if (!config.ok()) {
    std::fprintf(stderr, "gguf_fuzz_seeds: %s is not a valid %s config: %s\n", s.name, arch.c_str(),
                 config.status().ToString().c_str());
    return false;
  }
  return w.Write(dir + "/seed_" + s.name + ".gguf").ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  for (uint32_t version : {2u, 3u}) {
    GgufWriter w;
    w.set_version(version);
    auto& md = w.metadata();
    md.Set("general.architecture", "llama");
    md.Set("general.alignment", uint32_t{32});
    md.Set("llama.block_count", uint32_t{2});
    md.Set("llama.rope.freq_base", 10000.0f);
    md.Set("flag", true);
    md.Set("big", uint64_t{123456789});
    md.Set("neg", int64_t{-7});
    md.Set("d", 0.5);
    md.Set("tokenizer.ggml.tokens", GgufValue::StringArray({"<unk>", "<s>", "</s>", "a", "b"}));
    md.Set("tokenizer.ggml.scores", GgufValue::F32Array({0, 0, 0, -1, -2}));
    md.Set("nested", GgufValue::Array(GgufType::kArray, {GgufValue::I32Array({1, 2})}));
    std::vector<uint8_t> f32(4 * 32, 0), q8(34 * 2, 1), q4k(144, 2);
    if (!w.AddTensor("a", DType::kF32, {32}, f32.data(), f32.size()).ok() ||
        !w.AddTensor("b", DType::kQ8_0, {32, 2}, q8.data(), q8.size()).ok() ||
        !w.AddTensor("c", DType::kQ4_K, {256}, q4k.data(), q4k.size()).ok()) {
      return 1;
    }
    if (!w.Write(dir + "/seed_v" + std::to_string(version) + ".gguf").ok()) return 1;
  }
  for (const ModelSeed& s : kModelSeeds) {
    if (!WriteModelSeed(dir, s)) return 1;
  }
  return 0;
}
