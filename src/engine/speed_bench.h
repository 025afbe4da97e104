// Speed benchmark in the style of llama-bench: prompt processing (ppN: N
// random tokens in one batch into an empty cache) and text generation (tgN:
// N single-token steps from an empty cache), each repeated, after one warm-up
// run. Used by `pagoda bench`.
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
  uint64_t seed = 1234;
  KvType kv_type = KvType::kF16;  // element type of the KV cache
};

struct SpeedBenchResult {
  std::vector<double> pp_tokens_per_s;  // one per repetition
  std::vector<double> tg_tokens_per_s;
};

double Median(std::vector<double> v);

Result<SpeedBenchResult> RunSpeedBench(Model& model, const SpeedBenchOptions& options);

}  // namespace pagoda
