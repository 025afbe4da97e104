// Speed benchmark in the style of llama-bench: prompt processing (ppN: N
// random tokens in one batch into an empty cache) and text generation (tgN:
// N single-token steps from an empty cache), each repeated, after one warm-up
// run. With n_parallel = P > 1, tg decodes P sequences at once: each step is
// one batch of P tokens (one per sequence), and tg_tokens_per_s is the
// aggregate P * N / time (batched decode, as `pagoda serve` runs it). Used by
// `pagoda bench`.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
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
};

double Median(std::vector<double> v);

Result<SpeedBenchResult> RunSpeedBench(Model& model, const SpeedBenchOptions& options);

}  // namespace pagoda
