// Model: a loaded transformer that turns a Batch into logits, reading and
// writing a KvCache. Weights are views into the GGUF mmap, which the model
// keeps alive through a shared_ptr<const GgufFile>; scratch buffers are
// allocated once at load, so Forward() does not allocate.
// Threading: a Model is used by one thread at a time (the engine thread); it
// runs its kernels on the ThreadPool given at load, which must outlive it.
#pragma once

#include <atomic>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "gguf/gguf_file.h"
#include "model/batch.h"
#include "model/decode_weight_store.h"
#include "model/kv_cache.h"
#include "model/model_config.h"

namespace pagoda {

struct ModelOptions {
  // Tokens per internal micro-batch: bounds scratch memory. Larger batches
  // are split transparently.
  int32_t max_batch_tokens = 512;
  // --decode-weights: a copy of every linear weight in this type (Q4_0 or
  // Q4_K) for decode tokens (Batch::decode); nullopt = one set of weights.
  std::optional<DType> decode_weights;
  // MLA models: expand the cached latents into per-head K/V every step
  // instead of absorbed attention (for measuring both; see mla_attention.h).
  bool mla_decompress = false;
};

// What one forward step writes: logits rows [tokens with want_logits,
// n_vocab] and hidden rows [tokens with want_hidden, n_embd], each in batch
// order. `hidden` is the final hidden state: after the last norm for decoders
// (what the LM head reads), the last layer's output for encoders (what the
// pooler reads). Either span may be empty when the batch asks for none.
struct ForwardOutputs {
  std::span<float> logits;
  std::span<float> hidden;
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;
  // The per-layer layout a KvCache for this model must have.
  virtual const KvCacheSpec& kv_cache_spec() const = 0;
  int64_t n_vocab() const { return config().n_vocab; }
  // The decode-weight copies held (type nullopt when none).
  virtual DecodeWeightsInfo decode_weights_info() const { return {}; }
  // MoE expert weight bytes read by every Forward so far (each selected
  // expert counted once per micro-batch): what batched decode of an MoE
  // model really reads, for `pagoda bench`. 0 for dense models.
  virtual int64_t expert_bytes_read() const { return 0; }

  // Runs one step: writes the K/V of every batch token into `kv` and the
  // logits of the tokens with want_logits into `logits`, row by row in batch
  // order: [batch.n_outputs(), n_vocab] floats. Errors (bad token id, bad
  // position or sequence, KV cache full, wrong cache layout, logits too
  // small) are reported before anything is written.
  Status Forward(const Batch& batch, KvCache& kv, std::span<float> logits) {
    return Run(batch, kv, ForwardOutputs{logits, {}});
  }
  // The same, also writing the hidden rows of the tokens with want_hidden.
  virtual Status Run(const Batch& batch, KvCache& kv, const ForwardOutputs& out) = 0;

  // Embedding and scoring (docs/EMBEDDINGS.md). An encoder (bert) attends in
  // both directions: each batch must hold every sequence whole (positions
  // 0..n-1 in one step) and the KV cache is only a layout placeholder.
  virtual bool causal() const { return true; }
  // Has an LM head (logits): decoders yes, bert encoders no.
  virtual bool generates() const { return true; }
  // Outputs of the classifier head (cross-encoder rerankers, pooling kRank);
  // 0 when the model has none.
  virtual int64_t n_classifier_outputs() const { return 0; }
  // Applies the classifier head to a pooled vector: [n_embd] -> [n_classifier_outputs].
  virtual Status Classify(std::span<const float> pooled, std::span<float> out) const {
    (void)pooled;
    (void)out;
    return FailedPrecondition("the model has no classifier head");
  }

  // Interruption: while `*flag` is true, Forward stops at its next layer
  // boundary and returns DeadlineExceeded ("interrupted"), having written K/V
  // only at this step's own positions (which the caller recomputes: nothing of
  // the step is committed). The engine raises it when a real-time request
  // arrives during a step that holds only lower-class work (docs/SCHEDULING.md).
  // nullptr (the default): never. Set between steps, on the engine thread.
  void set_interrupt(const std::atomic<bool>* flag) { interrupt_ = flag; }

 protected:
  bool interrupted() const { return interrupt_ != nullptr && interrupt_->load(std::memory_order_relaxed); }

 private:
  const std::atomic<bool>* interrupt_ = nullptr;
};

// Loads the model of `file`, choosing the implementation by
// general.architecture from ArchRegistry::Builtin().
Result<std::unique_ptr<Model>> LoadModel(std::shared_ptr<const GgufFile> file, ThreadPool& pool,
                                         const ModelOptions& options = {});
// Opens `path` and loads it.
Result<std::unique_ptr<Model>> LoadModel(const std::string& path, ThreadPool& pool,
                                         const ModelOptions& options = {});

}  // namespace pagoda
