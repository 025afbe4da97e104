// Speed benchmark in the style of llama-bench: prompt processing (ppN: N
// random tokens in one batch into an empty cache) and text generation (tgN:
// N single-token steps from an empty cache), each repeated, after one warm-up
// run. With n_parallel = P > 1, tg decodes P sequences at once: each step is
// one batch of P tokens (one per sequence), and tg_tokens_per_s is the
// aggregate P * N / time (batched decode, as `pagoda serve` runs it). Used by
// `pagoda bench`.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace pagoda {

struct SpeedBenchOptions {
  int32_t n_prompt = 512;   // 0 skips pp
  int32_t n_gen = 128;      // 0 skips tg
  int32_t repetitions = 3;
  int32_t n_parallel = 1;   // sequences decoded at once in tg
  uint64_t seed = 1234;
  KvType kv_type = KvType::kF16;  // element type of the KV cache
  int32_t n_depth = 0;  // positions prefilled (untimed) before each pp / tg run (llama-bench -d)
};

struct SpeedBenchResult {
  std::vector<double> pp_tokens_per_s;  // one per repetition
  std::vector<double> tg_tokens_per_s;  // aggregate over n_parallel sequences
  // MoE models: expert weight bytes the timed tg steps read, per step (the
  // union of the experts each step selected; Model::expert_bytes_read()).
  double tg_expert_bytes_per_step = 0;
};

double Median(std::vector<double> v);

Result<SpeedBenchResult> RunSpeedBench(Model& model, const SpeedBenchOptions& options);

// The linear weights (MatMul operands) of a checkpoint, from its tensor list,
// for the bounds `pagoda bench` prints beside its figures: every tensor of two
// or more dimensions except token_embd.weight, which is looked up, not
// multiplied (it counts as the LM head when there is no output.weight).
// Expert tensors (*_exps: [n_in, n_out, n_expert]) count <arch>.expert_used_count /
// <arch>.expert_count of their size, what one token reads.
struct LinearWeights {
  struct Group {
    DType type = DType::kF32;
    bool packed = false;  // has a load-time packed copy (kernels/cpu/packed_weights.h)
    bool head = false;    // the LM head: in pp it multiplies the last token only
    int64_t n_tensors = 0;
    int64_t bytes = 0;
  };
  std::vector<Group> groups;  // by (type, packed, head), in order of first appearance
  // Decode tokens' weights when --decode-weights made copies (DecodeWeightsInfo).
  std::optional<DType> decode_type;
  bool decode_packed = false;
  double decode_bytes = 0;    // weight bytes one decode step reads, LM head included
  double prefill_params = 0;  // weights multiplied per prompt token; LM head excluded
                              // (pp computes the logits of its last token only)
  double expert_decode_bytes = 0;  // the expert tensors' part of decode_bytes (active share)
  double total_params = 0;    // every tensor's elements (token_embd included)
  double active_params = 0;   // what one token uses: experts at their active share, token_embd one row
};
LinearWeights CountLinearWeights(const GgufFile& file, const DecodeWeightsInfo& decode = {});

// Bytes a tg step reads per generated token, on average over the run: the
// decode weights once per step, shared by its n_parallel tokens, plus each
// sequence's K and V rows (and scales) of every cached position in every
// layer (n_depth + i + 1 at step i). Activations, the embedding row and
// logits are left out (well under 1 % for a 1B model).
double TgBytesPerToken(double weight_bytes, const KvCacheSpec& kv, KvType kv_type, const SpeedBenchOptions& opt);

}  // namespace pagoda
