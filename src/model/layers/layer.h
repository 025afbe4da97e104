// Layer interfaces of a decoder block: an attention layer (GQA today; MLA
// later) and a feed-forward layer (dense SwiGLU today; MoE later). A model is
// a stack of blocks that pair one of each, so new layer types slot in without
// touching the model loop. Layers own no mutable state: they read weights
// (views into the GGUF mmap) and write into the caller's buffers and KV cache.
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "kernels/cpu/ops.h"
#include "model/kv_cache.h"
#include "model/layers/phased_weight.h"

namespace pagoda {

// The batch rows (indices into the micro-batch) of one sequence.
struct SeqRows {
  int32_t seq_id = 0;
  const int32_t* rows = nullptr;
  int32_t n_rows = 0;
};

// Layers carve ctx.scratch into regions of whole 16-float (64-byte) units.
inline constexpr int64_t Round16(int64_t n) { return (n + 15) / 16 * 16; }

// What a forward pass read, for benchmarks (accumulated by the layers).
struct ForwardStats {
  int64_t expert_bytes = 0;  // MoE expert weight bytes read (each selected expert once per micro-batch)
};

// Everything a layer needs about the current micro-batch besides its input.
struct ForwardContext {
  ThreadPool* pool = nullptr;
  KvCache* kv = nullptr;
  int64_t n_tokens = 0;
  const int32_t* positions = nullptr;  // [n_tokens]
  const int32_t* seq_ids = nullptr;    // [n_tokens]
  const SeqRows* seqs = nullptr;       // rows grouped by sequence
  int n_seqs = 0;
  const float* rope_cos = nullptr;     // [n_tokens, n_rot/2] for the model's RoPE
  const float* rope_sin = nullptr;
  kernels::AttentionSeq* attn_seqs = nullptr;  // [n_seqs] scratch for attention layers
  float* scratch = nullptr;  // at least the layer's ScratchFloats(n_tokens) floats, 64-byte aligned
  // The rows [0, n_tokens) as runs of one phase each: linear layers multiply
  // each run with that phase's weights (PhasedMatMul).
  std::span<const PhaseRun> runs;
  ForwardStats* stats = nullptr;  // may be null
};

class AttentionLayer {
 public:
  virtual ~AttentionLayer() = default;
  // What this layer stores per position in the KV cache.
  virtual KvLayerSpec kv_spec() const = 0;
  virtual int64_t ScratchFloats(int64_t n_tokens) const = 0;
  // x: [n_tokens, n_embd] (normalised), out: [n_tokens, n_embd]. Writes the
  // batch's K/V into ctx.kv at (layer, seq, pos), then attends.
  virtual void Forward(const ForwardContext& ctx, int layer, const float* x, float* out) const = 0;
};

class FfnLayer {
 public:
  virtual ~FfnLayer() = default;
  virtual int64_t ScratchFloats(int64_t n_tokens) const = 0;
  // x: [n_tokens, n_embd] (normalised), out: [n_tokens, n_embd].
  virtual void Forward(const ForwardContext& ctx, const float* x, float* out) const = 0;
};

}  // namespace pagoda
