// MlaAttention: DeepSeek-V2/V3 multi-head latent attention (deepseek2 GGUFs:
// DeepSeek-V2/V3/R1, Kimi K2, GLM-4.7-Flash, Kanana-2).
//   q    = q_b(rms_norm(q_a x)) or attn_q x           [n_head, nope + rope]
//   kv_a = kv_a_mqa x = [c_kv (kv_lora) | k_pe (rope)]  c_kv RMS-normalised
// The cache keeps only kv_a per position (after the norm and RoPE of k_pe):
// one "K" row of kv_lora + rope elements shared by all heads, no V. Attention
// is absorbed: each head's query becomes [W_UK[h]^T q_nope | q_pe], attends
// over the latent rows as one KV head (V = the latent part of the same row),
// and its latent output goes through W_UV[h] before attn_output. W_UK / W_UV
// come from attn_k_b / attn_v_b (current files) or are cut from attn_kv_b
// (files converted before April 2025); both give the same numbers.
// MlaMode::kDecompress instead expands every cached latent of the sequence
// into per-head keys and values each step (the "naive" MHA form) and runs
// ordinary attention over them: the same cache, more arithmetic per step at
// long contexts, less per (query, key) pair; `pagoda bench --mla` measures
// both. The default is absorbed everywhere, so a position's values never
// depend on whether it was prefilled or decoded (batch invariance).
#pragma once

#include <memory>
#include <vector>

#include "model/layers/layer.h"
#include "model/model_config.h"
#include "model/weight_loader.h"

namespace pagoda {

enum class MlaMode { kAbsorbed, kDecompress };

class MlaAttention final : public AttentionLayer {
 public:
  static Result<std::unique_ptr<MlaAttention>> Load(const WeightLoader& w, int layer,
                                                    const ModelConfig& config,
                                                    MlaMode mode = MlaMode::kAbsorbed);

  KvLayerSpec kv_spec() const override;
  int64_t ScratchFloats(int64_t n_tokens) const override;
  void Forward(const ForwardContext& ctx, int layer, const float* x, float* out) const override;

 private:
  MlaAttention() = default;
  int64_t qk_dim() const { return nope_ + rope_; }
  int64_t q_width() const { return n_head_ * qk_dim(); }
  int64_t latent_width() const { return kv_lora_ + rope_; }
  // y[h] = x[h] * w[h]^T for every head in one MatMulGrouped (each run of
  // rows with its phase's weight): x [n_head][n][n_in] -> y [n_head][n][n_out].
  void PerHeadMatMul(const ForwardContext& ctx, const std::vector<PhasedWeight>& w, const float* x, int64_t n_in,
                     float* y, int64_t n_out) const;
  // Attention over decompressed per-head K/V of every cached position:
  // q [n, n_head, nope + rope] (RoPE applied) -> o [n, n_head, v_dim].
  void AttendDecompressed(const ForwardContext& ctx, int layer, const float* q, float* o) const;

  int64_t n_head_ = 0, q_lora_ = 0, kv_lora_ = 0, nope_ = 0, rope_ = 0, v_dim_ = 0;
  float rms_eps_ = 0.0f;
  float scale_ = 0.0f;
  PhasedWeight wq_a_, wq_b_, wq_;       // q_lora: [n_embd -> q_lora], [q_lora -> q width]; else wq_
  const float* q_a_norm_ = nullptr;     // [q_lora]
  PhasedWeight wkv_a_;                  // [n_embd -> kv_lora + rope]
  const float* kv_a_norm_ = nullptr;    // [kv_lora]
  std::vector<PhasedWeight> k_b_;       // [n_head] of [nope -> kv_lora] (W_UK^T)
  std::vector<PhasedWeight> v_b_;       // [n_head] of [kv_lora -> v_dim] (W_UV)
  std::vector<float> k_b_owned_;        // k_b_ cut from attn_kv_b and transposed, f32
  PhasedWeight wo_;                     // [n_head * v_dim -> n_embd]
  MlaMode mode_ = MlaMode::kAbsorbed;
  std::vector<TensorView> k_up_;        // kDecompress: [n_head] of [kv_lora -> nope] (W_UK)
  std::vector<float> k_up_owned_;       // W_UK transposed back from attn_k_b, f32
};

}  // namespace pagoda
