// DecoderModel: a decoder-only transformer built from pre-norm blocks
//   x += attn(rms_norm(x) * attn_norm);  x += ffn(rms_norm(x) * ffn_norm)
// over a token embedding, with a final RMSNorm and an LM head. The layer types
// inside each block come from the architecture (GQA or MLA attention, dense or
// MoE FFN); this class runs the batch through them. Created by the arch
// factories (see standard_decoder.h).
#pragma once

#include <memory>
#include <vector>

#include "kernels/cpu/packed_weights.h"
#include "model/decode_weight_store.h"
#include "model/float_buffer.h"
#include "model/layers/layer.h"
#include "model/model.h"

namespace pagoda {

struct DecoderBlock {
  const float* attn_norm = nullptr;  // [n_embd]
  std::unique_ptr<AttentionLayer> attn;
  const float* ffn_norm = nullptr;   // [n_embd]
  std::unique_ptr<FfnLayer> ffn;
};

struct DecoderWeights {
  TensorView token_embd;                // [n_embd, n_vocab]
  std::vector<DecoderBlock> blocks;     // [n_layer]
  const float* output_norm = nullptr;   // [n_embd]
  PhasedWeight output;                  // [n_embd -> n_vocab]; token_embd when tied
  // Owns the decode copies the layers' PhasedWeights point to; null without
  // --decode-weights.
  std::unique_ptr<DecodeWeightStore> decode_store;
  // Owns the packed copies (kernels/cpu/packed_weights.h) the views point to.
  std::unique_ptr<kernels::PackedWeightStore> packed_store;
};

class DecoderModel final : public Model {
 public:
  static Result<std::unique_ptr<DecoderModel>> Create(std::shared_ptr<const GgufFile> file,
                                                      ModelConfig config, DecoderWeights weights,
                                                      ThreadPool& pool,
                                                      const ModelOptions& options);

  const ModelConfig& config() const override { return config_; }
  const KvCacheSpec& kv_cache_spec() const override { return kv_spec_; }
  Status Run(const Batch& batch, KvCache& kv, const ForwardOutputs& out) override;
  DecodeWeightsInfo decode_weights_info() const override;
  int64_t expert_bytes_read() const override { return stats_.expert_bytes; }

 private:
  DecoderModel(std::shared_ptr<const GgufFile> file, ModelConfig config, DecoderWeights weights,
               ThreadPool& pool, const ModelOptions& options);
  Status Validate(const Batch& batch, const KvCache& kv, const ForwardOutputs& out) const;
  // Where the next output rows go.
  struct OutCursor {
    float* logits;
    float* hidden;
  };
  // Tokens [start, start + n) of the batch; advances `out` past the rows written.
  // Sets stopped_ when interrupted (Model::set_interrupt).
  void ForwardMicroBatch(const Batch& batch, int64_t start, int64_t n, KvCache& kv, OutCursor& out);
  // The head over the output rows' final normalised states xn [n_out, n_embd].
  void WriteOutputs(const Batch& batch, int64_t start, float* xn, int64_t n_out, int n_out_runs, OutCursor& out);
  void GroupBySequence(const int32_t* seq_ids, int64_t n);

  std::shared_ptr<const GgufFile> file_;  // keeps the weight views valid
  ModelConfig config_;
  DecoderWeights w_;
  KvCacheSpec kv_spec_;
  void Stop() { stopped_ = true; }
  bool stopped_ = false;  // the last micro-batch stopped on an interrupt
  ForwardStats stats_;  // accumulated over every Forward
  ThreadPool& pool_;
  int64_t max_tokens_ = 0;
  std::vector<double> inv_freq_;  // [n_rot / 2]

  // Scratch, sized for max_tokens_ at construction.
  FloatBuffer x_;        // [max_tokens, n_embd] residual stream
  FloatBuffer xn_;       // [max_tokens, n_embd] normalised input of a layer
  FloatBuffer y_;        // [max_tokens, n_embd] layer output
  FloatBuffer layer_scratch_;
  FloatBuffer rope_cos_, rope_sin_;  // [max_tokens, n_rot / 2]
  std::vector<int32_t> rows_;        // rows grouped by sequence
  std::vector<SeqRows> seqs_;
  std::vector<int32_t> seq_fill_;
  std::vector<kernels::AttentionSeq> attn_seqs_;
  std::vector<int32_t> out_rows_;    // rows of the micro-batch that need logits
  std::vector<uint8_t> out_decode_;  // decode flags of out_rows_
  std::vector<PhaseRun> runs_;       // phase runs of the micro-batch
  std::vector<PhaseRun> out_runs_;   // phase runs of out_rows_
};

}  // namespace pagoda
