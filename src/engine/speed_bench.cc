#include "engine/speed_bench.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "model/kv_cache.h"

namespace pagoda {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Result<SpeedBenchResult> RunSpeedBench(Model& model, const SpeedBenchOptions& opt) {
  using Clock = std::chrono::steady_clock;
  if (opt.n_prompt < 0 || opt.n_gen < 0 || opt.repetitions <= 0) {
    return InvalidArgument("bench sizes must be >= 0 and repetitions > 0");
  }
  const int32_t n_ctx = std::max(opt.n_prompt, opt.n_gen) + 1;
  PAGODA_ASSIGN_OR_RETURN(auto kv, ContiguousKvCache::Create(model.kv_cache_spec(), 1, n_ctx, opt.kv_type));
  std::vector<float> logits(static_cast<size_t>(model.n_vocab()));
  std::mt19937_64 rng(opt.seed);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(model.n_vocab() - 1));
  Batch batch;
  SpeedBenchResult res;

  auto run_pp = [&]() -> Result<double> {
    kv->RemoveSequence(0);
    batch.Clear();
    for (int32_t i = 0; i < opt.n_prompt; ++i) batch.Add(tok(rng), i, 0, i + 1 == opt.n_prompt);
    auto t0 = Clock::now();
    PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    return opt.n_prompt / std::chrono::duration<double>(Clock::now() - t0).count();
  };
  auto run_tg = [&]() -> Result<double> {
    kv->RemoveSequence(0);
    auto t0 = Clock::now();
    for (int32_t i = 0; i < opt.n_gen; ++i) {
      batch.Clear();
      batch.Add(tok(rng), i, 0, true);
      PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    }
    return opt.n_gen / std::chrono::duration<double>(Clock::now() - t0).count();
  };

  if (opt.n_prompt > 0) {
    PAGODA_RETURN_IF_ERROR(run_pp().status());  // warm-up
    for (int r = 0; r < opt.repetitions; ++r) {
      PAGODA_ASSIGN_OR_RETURN(double tps, run_pp());
      res.pp_tokens_per_s.push_back(tps);
    }
  }
  if (opt.n_gen > 0) {
    PAGODA_RETURN_IF_ERROR(run_tg().status());
    for (int r = 0; r < opt.repetitions; ++r) {
      PAGODA_ASSIGN_OR_RETURN(double tps, run_tg());
      res.tg_tokens_per_s.push_back(tps);
    }
  }
  return res;
}

}  // namespace pagoda
