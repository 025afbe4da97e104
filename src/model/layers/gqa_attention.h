// GqaAttention: multi-head attention with grouped K/V heads (MHA and MQA are
// the n_head_kv == n_head / == 1 cases). Optional Q/K/V/O biases (Qwen2) and
// per-head Q/K RMSNorm before RoPE (Qwen3). K/V are cached as
// [n_head_kv, head_dim] per position.
#pragma once

#include <memory>

#include "model/layers/layer.h"
#include "model/model_config.h"
#include "model/weight_loader.h"
#include "tensor/tensor_view.h"

namespace pagoda {

enum class Presence { kAbsent, kOptional, kRequired };

struct GqaAttentionOptions {
  Presence qkv_bias = Presence::kOptional;  // attn_{q,k,v}.bias
  Presence out_bias = Presence::kOptional;  // attn_output.bias
  Presence qk_norm = Presence::kAbsent;     // attn_{q,k}_norm.weight [head_dim_k]
};

class GqaAttention final : public AttentionLayer {
 public:
  static Result<std::unique_ptr<GqaAttention>> Load(const WeightLoader& w, int layer,
                                                    const ModelConfig& config,
                                                    const GqaAttentionOptions& options);

  KvLayerSpec kv_spec() const override;
  int64_t ScratchFloats(int64_t n_tokens) const override;
  void Forward(const ForwardContext& ctx, int layer, const float* x, float* out) const override;

 private:
  GqaAttention() = default;
  int64_t q_width() const { return n_head_ * head_dim_k_; }
  int64_t k_width() const { return n_head_kv_ * head_dim_k_; }
  int64_t v_width() const { return n_head_kv_ * head_dim_v_; }
  int64_t o_width() const { return n_head_ * head_dim_v_; }

  int n_head_ = 0;
  int n_head_kv_ = 0;
  int head_dim_k_ = 0;
  int head_dim_v_ = 0;
  int n_rot_ = 0;
  bool rope_neox_ = false;
  float rms_eps_ = 0.0f;
  float scale_ = 0.0f;  // 1/sqrt(head_dim_k), times YaRN's mscale^2
  PhasedWeight wq_, wk_, wv_, wo_;  // [n_embd -> q/k/v width], [o width -> n_embd]
  const float* bq_ = nullptr;
  const float* bk_ = nullptr;
  const float* bv_ = nullptr;
  const float* bo_ = nullptr;
  const float* q_norm_ = nullptr;  // [head_dim_k]
  const float* k_norm_ = nullptr;
};

}  // namespace pagoda
