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

  bool tied_output = false;  // no output.weight: token_embd.weight is the LM head
};

// Which RoPE pairing an architecture uses; the file does not say.
struct ArchTraits {
  bool rope_neox = false;
};

// Reads and validates the hyperparameters of `file` for architecture `arch`
// (whose keys are prefixed "<arch>."). Errors name the file and the key or
// tensor at fault. Also reads rope_freqs.weight, n_vocab and tied_output from
// the tensor table.
Result<ModelConfig> ReadModelConfig(const GgufFile& file, const std::string& arch,
                                    const ArchTraits& traits);

}  // namespace pagoda
