// Internal to random_model*.cc: what a RandomModelSpec puts in the file (the
// tensors with their types, shapes and distributions, and the metadata), and
// the checks on the spec. random_model.cc turns the plan into bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_metadata.h"
#include "model/random_model.h"
#include "tensor/dtype.h"

namespace pagoda::random_model {

// How a tensor's numbers are made.
enum class Derive {
  kNone,    // drawn: mean + sigma * N(0, 1) from (seed, name, row) streams, or fixed `values`
  kGateUp,  // ffn_gate_up_exps: per expert the rows of sources[0] (gate), then of sources[1] (up)
  kKB,      // attn_k_b {nope, kv_lora, n_head}: per head, W_UK of sources[0] (attn_kv_b) transposed
  kVB,      // attn_v_b {kv_lora, v_head, n_head}: per head, the W_UV rows of sources[0]
};

struct TensorPlan {
  std::string name;
  DType type;
  std::vector<int64_t> ne;  // ggml order
  float mean = 0.0f;
  float sigma = 0.0f;
  std::vector<float> values;  // fixed F32 contents instead of random ones
  Derive derive = Derive::kNone;
  // The drawn tensors a derived one takes its numbers from; not in the file.
  std::vector<TensorPlan> sources;
  int64_t dim_a = 0;  // kGateUp: n_ff_exp; kKB / kVB: qk_nope_dim
  int64_t dim_b = 0;  // kKB / kVB: v_head_dim

  int64_t rows() const {
    int64_t n = 1;
    for (size_t i = 1; i < ne.size(); ++i) n *= ne[i];
    return n;
  }
};

int VocabSize(const RandomModelSpec& s);
int64_t TokenizerVocabSize(const GgufMetadata& md);
bool HasExperts(const RandomModelSpec& s);

// Every tensor of the file, in file order.
std::vector<TensorPlan> PlanTensors(const RandomModelSpec& s);

// general.* and <arch>.* keys (not the tokenizer's).
void WriteMetadata(const RandomModelSpec& s, GgufMetadata& md);

// The MoE / MLA / YaRN / NextN fields (ValidateRandomModelSpec calls it).
Status ValidateMoeMla(const RandomModelSpec& s);

}  // namespace pagoda::random_model
