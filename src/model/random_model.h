// Random-weight model builder: writes a GGUF with llama.cpp's tensor names,
// shapes (ggml order, ne[0] contiguous) and metadata keys for the dense
// "llama", "qwen2" (Q/K/V biases) and "qwen3" (per-head Q/K RMSNorm)
// architectures and the mixture-of-experts ones: "llama" with experts
// (Mixtral), "qwen2moe" (shared expert with a sigmoid gate), "qwen3moe",
// "deepseek2" (multi-head latent attention in the early attn_kv_b layout or
// the current attn_k_b / attn_v_b one, optional query LoRA, softmax or
// sigmoid routing with the V3 selection bias, expert groups, leading dense
// layers, YaRN) and "glm4moe" (partial NeoX rotary, QKV biases, NextN blocks),
// and the "bert" encoder (embeddings, cross-encoders with a classifier head;
// a synthetic WordPiece vocabulary unless `tokenizer` carries one).
// Weights are drawn deterministically from a seed. Used by `pagoda
// make-model`, the demo model of `pagoda generate`, tests and benchmarks
// (shapes of real models without their weights).
//
// Weights are N(0, sigma) with sigma scaled by 1/sqrt(fan-in) from values
// that keep a tiny model's activations and next-token distribution
// non-degenerate at any width (see /work/shared/testdata/synthetic/README.md
// for the n_embd 128 originals); norm weights are 1 + N(0, 0.1). Each tensor
// row has its own random stream derived from (seed, tensor name, row), so the
// bytes do not depend on the thread count, and a tensor does not change when
// another is added. Normals come from a 65536-entry inverse-CDF table (tails
// cut at about 4.3 sigma): fast enough for a 1B model in seconds.
//
// Tensors that restate other numbers are derived from them, not drawn: the
// current-layout attn_k_b / attn_v_b hold exactly the rows of the attn_kv_b
// the same seed gives in the early layout (k_b transposed), and a merged
// ffn_gate_up_exps holds the rows ffn_gate_exps and ffn_up_exps would hold.
// WriteRandomModel streams: the header first, then each tensor generated and
// written in turn, so memory holds one tensor (a 30B model writes in ~1 GB).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"
#include "gguf/gguf_writer.h"
#include "tensor/dtype.h"

namespace pagoda {

struct RandomModelSpec {
  // "llama" | "qwen2" | "qwen3" | "qwen2moe" | "qwen3moe" | "deepseek2" | "glm4moe" | "bert"
  std::string arch = "llama";
  std::string name = "pagoda-random";  // general.name
  int n_embd = 256;
  int n_layer = 2;
  int n_head = 4;
  int n_head_kv = 4;
  int head_dim = 0;   // 0 = n_embd / n_head
  int n_ff = 512;     // dense FFN width (dense models, leading dense layers)
  int n_vocab = 0;    // 0 = the size of `tokenizer`'s vocabulary
  int n_ctx = 2048;   // <arch>.context_length
  bool tied_output = false;  // no output.weight: token_embd is the LM head
  float rope_base = 10000.0f;
  // Informational: the RoPE pairing is implied by the architecture (qwen2 and
  // qwen3 use NeoX, llama does not); nothing in the file records it.
  bool rope_neox = false;
  float rms_eps = 1e-5f;     // bert: written as attention.layer_norm_epsilon
  // <arch>.pooling_type (llama.cpp numbering: 0 none, 1 mean, 2 cls, 3 last,
  // 4 rank); -1 = key not written.
  int pooling_type = -1;
  // bert: outputs of the classifier head (cls [n_embd -> n_embd] + tanh, then
  // cls.output [n_embd -> n_cls_out]); 0 = no head. Rerankers have 1.
  int n_cls_out = 0;
  // Llama-3-style per-frequency divisors, written as the F32 tensor
  // rope_freqs.weight [head_dim / 2]; empty = none.
  std::vector<float> rope_freq_factors;
  DType weight_type = DType::kF16;       // matrices and token_embd
  std::optional<DType> output_type;      // output.weight; default weight_type
  // llama-quantize's "_M" mix (Q4_K_M, Q5_K_M): attn_v and ffn_down of the
  // layers its use_more_bits picks (the first and last eighth, and every
  // third between) are Q6_K; the rest weight_type.
  bool more_bits_mix = false;
  // Matrices whose rows do not fit weight_type's block (attn_k_b's rows are
  // qk_nope_dim long) take llama-quantize's fallback: Q4_K -> Q5_0,
  // Q5_K -> Q5_0, Q6_K -> Q8_0, then F16 when even that does not divide.

  // Mixture of experts; n_expert 0 = a dense model.
  int n_expert = 0;                   // <arch>.expert_count
  int n_expert_used = 0;              // <arch>.expert_used_count
  int n_ff_exp = 0;                   // expert width; llama writes it as feed_forward_length
  std::optional<DType> expert_type;   // ffn_{gate,up,down}_exps (and gate_up); default weight_type
  // deepseek2 / glm4moe: shared experts, one FFN of width n_ff_exp * count.
  int n_expert_shared = 0;            // <arch>.expert_shared_count
  // qwen2moe: width of its one shared expert (0 = none).
  int n_ff_shexp = 0;                 // <arch>.expert_shared_feed_forward_length
  int n_layer_dense_lead = 0;         // deepseek2 / glm4moe: leading dense layers
  float expert_weights_scale = 0.0f;  // 0 = key not written (deepseek2 writes 1)
  bool expert_weights_norm = false;   // deepseek2 / glm4moe: renormalise the top-k weights
  int expert_gating_func = 0;         // 1 softmax, 2 sigmoid; 0 = the arch's default, written
  bool exp_probs_b = false;           // blk.N.exp_probs_b.bias: selection bias (deepseek2, glm4moe)
  int n_expert_groups = 0;            // <arch>.expert_group_count; 0 = key not written
  int n_group_used = 0;               // <arch>.expert_group_used_count
  bool merged_gate_up_exps = false;   // one ffn_gate_up_exps {n_embd, 2 n_ff_exp, n_expert}

  // Multi-head latent attention (deepseek2).
  int q_lora_rank = 0;       // 0 = attn_q directly (DeepSeek-V2-Lite, Kanana-2)
  int kv_lora_rank = 0;
  int qk_rope_dim = 0;       // rope.dimension_count
  int qk_nope_dim = 0;
  int v_head_dim = 0;
  // true: attn_k_b / attn_v_b with key_length_mla / value_length_mla and one
  // KV head (llama.cpp since April 2025); false: the early single attn_kv_b.
  bool mla_split_kv_b = true;

  // glm4moe / qwen3moe extras.
  bool qk_norm = false;          // glm4moe: attn_q_norm / attn_k_norm (qwen3, qwen3moe: always)
  int n_rot = 0;                 // rope.dimension_count for GQA archs; 0 = head_dim (glm4moe: head_dim / 2)
  int nextn_predict_layers = 0;  // glm4moe: trailing NextN blocks, counted in block_count

  // YaRN rope scaling (deepseek2): factor 0 = none.
  float rope_scaling_factor = 0.0f;
  int rope_scaling_orig_ctx = 0;      // rope.scaling.original_context_length
  float yarn_log_multiplier = 0.0f;   // rope.scaling.yarn_log_multiplier (0.1 * mscale_all_dim)
  float yarn_beta_fast = 0.0f;        // 0 = key not written (llama.cpp: 32)
  float yarn_beta_slow = 0.0f;        // 0 = key not written (llama.cpp: 1)

  uint64_t seed = 0;
  // tokenizer.* keys are copied from here (e.g. the metadata of another
  // GGUF). Without tokenizer.ggml.tokens a synthetic vocabulary of n_vocab
  // tokens is generated (synthetic_vocab.h: SPM, WordPiece for bert) and only the keys it
  // does not define (a chat template, say) are taken from here.
  GgufMetadata tokenizer;
  int n_threads = 0;  // 0 = hardware concurrency; never changes the bytes
};

// Checks the spec: known arch, positive sizes, head counts that divide,
// row lengths that are multiples of the chosen types' block sizes, a
// vocabulary size consistent with the tokenizer metadata, and MoE / MLA
// fields that fit the architecture and each other.
Status ValidateRandomModelSpec(const RandomModelSpec& spec);

// Builds the whole model in memory (the writer then holds every tensor).
Result<GgufWriter> BuildRandomModel(const RandomModelSpec& spec);

// Writes the file BuildRandomModel(spec)->Serialize() would hold, streaming
// (one tensor in memory at a time).
Status WriteRandomModel(const RandomModelSpec& spec, const std::string& path);

// Named shapes of real models for `make-model --preset` (benchmarks): sets the
// architecture and size fields of `spec`, leaving types, seed and tokenizer.
// "qwen3-30b-a3b", "kanana-2-30b-a3b", "qwen2moe-a2.7b", "bert-base",
// "bert-base-reranker".
Status ApplyRandomModelPreset(const std::string& name, RandomModelSpec& spec);
std::vector<std::string> RandomModelPresetNames();

}  // namespace pagoda
