// ModelConfig: the hyperparameters of a decoder-only transformer, read from
// GGUF metadata (`<arch>.*` keys, llama.cpp conventions) and checked for sanity
// so that later code can size buffers without overflow. A plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace pagoda {

class GgufFile;

// Mixture-of-experts FFN hyperparameters (<arch>.expert_* keys); n_expert 0
// means a dense model.
struct MoeConfig {
  enum class Gating { kSoftmax, kSigmoid };
  int64_t n_expert = 0;         // expert_count
  int64_t n_expert_used = 0;    // expert_used_count (top-k)
  int64_t n_ff_exp = 0;         // expert_feed_forward_length (llama/Mixtral: feed_forward_length)
  int64_t n_expert_shared = 0;  // expert_shared_count
  int64_t n_ff_shexp = 0;       // shared expert width: expert_shared_feed_forward_length or n_ff_exp * n_expert_shared
  int64_t n_leading_dense = 0;  // leading_dense_block_count: layers [0, n) keep a dense FFN
  Gating gating = Gating::kSoftmax;  // expert_gating_func 1 softmax, 2 sigmoid
  bool norm_w = false;          // renormalise the selected weights to sum 1
  float w_scale = 1.0f;         // expert_weights_scale (0 read as 1)
  int64_t n_group = 1;          // expert_group_count: group-limited routing when > 1
  int64_t n_group_used = 1;     // expert_group_used_count
};

// Multi-head latent attention (deepseek2): q and kv pass through low-rank
// latents; the cache keeps the normalised kv latent and the shared RoPE key.
struct MlaConfig {
  int64_t q_lora_rank = 0;   // attention.q_lora_rank; 0 = direct attn_q
  int64_t kv_lora_rank = 0;  // attention.kv_lora_rank; 0 = not an MLA model
  int64_t head_dim_nope = 0; // key part without RoPE
  int64_t head_dim_rope = 0; // rope.dimension_count (k_pe shared by the heads)
  int64_t head_dim_v = 0;
  bool split_kv_b = false;   // attn_k_b / attn_v_b (since April 2025) rather than attn_kv_b
};

// YaRN RoPE scaling (rope.scaling.type "yarn"): frequencies blend between
// interpolated and extrapolated along a ramp over the correction dims, and the
// attention scores grow by attn_mscale^2.
struct YarnConfig {
  bool enabled = false;
  int64_t n_ctx_orig = 0;    // rope.scaling.original_context_length
  double beta_fast = 32.0;   // rope.scaling.yarn_beta_fast
  double beta_slow = 1.0;    // rope.scaling.yarn_beta_slow
  double attn_mscale = 1.0;  // 1 + log_mul * ln(factor); log_mul = yarn_log_multiplier or 0.1
};

// How an embedding model turns per-token hidden states into one vector:
// <arch>.pooling_type, with llama.cpp's numbering (kRank: the CLS vector
// through the classifier head, a cross-encoder's relevance score).
enum class PoolingType : int8_t { kUnspecified = -1, kNone = 0, kMean = 1, kCls = 2, kLast = 3, kRank = 4 };
const char* PoolingTypeName(PoolingType p);

struct ModelConfig {
  std::string arch;          // general.architecture, e.g. "llama"
  int64_t n_vocab = 0;       // rows of token_embd.weight
  int64_t n_ctx_train = 0;   // <arch>.context_length
  int64_t n_embd = 0;        // <arch>.embedding_length
  int64_t n_layer = 0;       // <arch>.block_count
  int64_t n_ff = 0;          // <arch>.feed_forward_length
  int64_t n_head = 0;        // <arch>.attention.head_count
  int64_t n_head_kv = 0;     // <arch>.attention.head_count_kv (default n_head)
  int64_t head_dim_k = 0;    // <arch>.attention.key_length (default n_embd / n_head)
  int64_t head_dim_v = 0;    // <arch>.attention.value_length (default head_dim_k)
  float rms_eps = 1e-5f;     // <arch>.attention.layer_norm_rms_epsilon

  // RoPE: theta_i = pos * rope_freq_scale * rope_base^(-2i/n_rot) / rope_freq_factors[i].
  int64_t n_rot = 0;             // <arch>.rope.dimension_count (default head_dim_k)
  double rope_base = 10000.0;    // <arch>.rope.freq_base
  double rope_freq_scale = 1.0;  // 1 / <arch>.rope.scaling.factor for type "linear"
  bool rope_neox = false;        // pairs (i, i + n_rot/2) instead of (2i, 2i+1); set by the arch
  std::vector<float> rope_freq_factors;  // rope_freqs.weight [n_rot/2], empty if absent

  YarnConfig yarn;

  bool tied_output = false;  // no output.weight: token_embd.weight is the LM head
  MoeConfig moe;
  MlaConfig mla;
  // Blocks in the file beyond n_layer (glm4moe NextN / MTP layers): their
  // tensors are present but the forward pass skips them.
  int64_t n_layer_skipped = 0;
  PoolingType pooling = PoolingType::kUnspecified;  // <arch>.pooling_type when present
};

// Which RoPE pairing an architecture uses; the file does not say.
struct ArchTraits {
  bool rope_neox = false;
  // How the selected experts' weights are renormalised: per the file's
  // expert_weights_norm, or fixed by the architecture (llama.cpp hardcodes
  // it for llama/Mixtral and qwen3moe (on) and qwen2moe (off)).
  enum class MoeNorm { kFromFile, kAlways, kNever } moe_norm = MoeNorm::kFromFile;
  // The expert_gating_func used when the key is absent (DeepSeek-V2 files: softmax).
  MoeConfig::Gating default_gating = MoeConfig::Gating::kSoftmax;
  // deepseek2: read the MLA keys (attention.kv_lora_rank etc.).
  bool mla = false;
  // glm4moe: nextn_predict_layers trailing blocks are not run.
  bool skip_nextn_layers = false;
};

// Reads and validates the hyperparameters of `file` for architecture `arch`
// (whose keys are prefixed "<arch>."). Errors name the file and the key or
// tensor at fault. Also reads rope_freqs.weight, n_vocab and tied_output from
// the tensor table.
Result<ModelConfig> ReadModelConfig(const GgufFile& file, const std::string& arch,
                                    const ArchTraits& traits);

}  // namespace pagoda
