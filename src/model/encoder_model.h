// EncoderModel: a BERT-style post-norm encoder (llama.cpp's "bert"):
//   x = LayerNorm(token_embd[t] + token_types[0] + position_embd[p])
//   per layer: x = LayerNorm(x + attn(x));  x = LayerNorm(x + ffn(x))
// with biased Q/K/V/O projections, unmasked attention within each sequence
// and a GELU FFN (ffn_up -> GELU -> ffn_down, biases). Token types are fixed
// to 0 as llama.cpp does: row 0 of token_types is added to every token.
// No LM head: Run writes the last layer's output rows (what the pooler
// reads); a cross-encoder's classifier head (cls: dense + tanh, cls.output)
// is applied to a pooled vector by Classify.
// Because attention looks both ways, every batch must hold each of its
// sequences whole (positions 0..n-1, in order); the KV cache is only a
// one-layer placeholder for the engine's block accounting and is never
// written. Created by arch/bert.cc. Engine thread only (see model.h).
#pragma once

#include <memory>
#include <vector>

#include "kernels/cpu/packed_weights.h"
#include "model/float_buffer.h"
#include "model/layers/phased_weight.h"
#include "model/model.h"

namespace pagoda {

struct EncoderBlock {
  PhasedWeight wq, wk, wv, wo;            // [n_embd -> n_embd]
  const float* bq = nullptr;              // [n_embd]
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* bo = nullptr;
  const float* attn_norm_w = nullptr;     // attn_output_norm [n_embd]
  const float* attn_norm_b = nullptr;
  PhasedWeight up;                        // [n_embd -> n_ff]
  const float* b_up = nullptr;            // [n_ff]
  PhasedWeight down;                      // [n_ff -> n_embd]
  const float* b_down = nullptr;          // [n_embd]
  const float* out_norm_w = nullptr;      // layer_output_norm [n_embd]
  const float* out_norm_b = nullptr;
};

struct EncoderWeights {
  TensorView token_embd;                  // [n_embd, n_vocab]
  TensorView position_embd;               // [n_embd, n_ctx_train]
  std::vector<float> token_type0;         // row 0 of token_types [n_embd]; empty when absent
  const float* embd_norm_w = nullptr;     // token_embd_norm [n_embd]
  const float* embd_norm_b = nullptr;
  std::vector<EncoderBlock> blocks;       // [n_layer]
  // Classifier head (rerankers); cls.weight absent = none.
  PhasedWeight cls;                       // [n_embd -> n_cls]
  const float* cls_b = nullptr;
  PhasedWeight cls_out;                   // [n_cls -> n_out]; absent = the tanh output itself
  const float* cls_out_b = nullptr;
  bool has_cls = false;
  bool has_cls_out = false;
  float norm_eps = 1e-12f;                // <arch>.attention.layer_norm_epsilon
  std::unique_ptr<kernels::PackedWeightStore> packed_store;  // owns packed copies, may be null
};

class EncoderModel final : public Model {
 public:
  static Result<std::unique_ptr<EncoderModel>> Create(std::shared_ptr<const GgufFile> file, ModelConfig config,
                                                      EncoderWeights weights, ThreadPool& pool,
                                                      const ModelOptions& options);

  const ModelConfig& config() const override { return config_; }
  const KvCacheSpec& kv_cache_spec() const override { return kv_spec_; }
  Status Run(const Batch& batch, KvCache& kv, const ForwardOutputs& out) override;
  bool causal() const override { return false; }
  bool generates() const override { return false; }
  int64_t n_classifier_outputs() const override;
  Status Classify(std::span<const float> pooled, std::span<float> out) const override;

 private:
  EncoderModel(std::shared_ptr<const GgufFile> file, ModelConfig config, EncoderWeights weights, ThreadPool& pool,
               int64_t max_tokens);
  Status Validate(const Batch& batch, const KvCache& kv, const ForwardOutputs& out);
  // Runs the sequences seqs_[s0, s1) (their rows gathered into one
  // micro-batch) and copies their wanted rows to `hidden`.
  void ForwardSequences(const Batch& batch, size_t s0, size_t s1, float* hidden);
  void Embed(const Batch& batch, int64_t n);
  void Layer(const EncoderBlock& blk, int64_t n);

  std::shared_ptr<const GgufFile> file_;  // keeps the weight views valid
  ModelConfig config_;
  EncoderWeights w_;
  KvCacheSpec kv_spec_;
  ThreadPool& pool_;
  int64_t max_tokens_ = 0;  // rows per micro-batch: >= max_batch_tokens and >= n_ctx_train

  // Per Run: the batch's sequences, each as its batch rows in position order.
  struct Seq {
    int32_t seq_id = 0;
    int32_t first = 0;   // index into seq_rows_
    int32_t n = 0;
  };
  std::vector<Seq> seqs_;
  std::vector<int32_t> seq_rows_;   // batch rows, grouped by sequence
  std::vector<int32_t> out_index_;  // [batch] hidden output row of each wanted token, else -1
  std::vector<int32_t> seq_of_id_;  // scratch for Validate: seq id -> index into seqs_

  // Scratch, sized for max_tokens_ at construction.
  std::vector<int32_t> mb_rows_;    // [max_tokens] batch row of each micro-batch row
  std::vector<int32_t> row_ids_;    // [max_tokens] 0, 1, 2, ...: DenseSeq rows
  std::vector<kernels::DenseSeq> dense_;
  FloatBuffer x_, q_, k_, v_, attn_, y_, ff_;  // [max_tokens, n_embd] (ff_: n_ff)
  FloatBuffer row_;                            // [n_embd] embedding row
  mutable FloatBuffer cls_tmp_;                // [n_cls] Classify's hidden layer
  PhaseRun run_;                                // every row of the micro-batch, prefill weights
};

}  // namespace pagoda
