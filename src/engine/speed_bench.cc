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
  if (opt.n_depth < 0) return InvalidArgument("bench depth must be >= 0");
  if (opt.n_parallel <= 0 || opt.n_parallel > 4096) return InvalidArgument("bench parallel must be in [1, 4096]");
  const int32_t n_ctx = opt.n_depth + std::max(opt.n_prompt, opt.n_gen) + 1;
  const int32_t n_par = opt.n_parallel;
  PAGODA_ASSIGN_OR_RETURN(auto kv, ContiguousKvCache::Create(model.kv_cache_spec(), n_par, n_ctx, opt.kv_type));
  std::vector<float> logits(static_cast<size_t>(model.n_vocab()) * static_cast<size_t>(n_par));
  std::mt19937_64 rng(opt.seed);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(model.n_vocab() - 1));
  Batch batch;
  SpeedBenchResult res;

  // Empties the cache and prefills n_depth random tokens into each of the
  // n_parallel sequences, untimed.
  auto reset = [&]() -> Status {
    for (int32_t s = 0; s < n_par; ++s) {
      kv->RemoveSequence(s);
      if (opt.n_depth == 0) continue;
      batch.Clear();
      for (int32_t i = 0; i < opt.n_depth; ++i) batch.Add(tok(rng), i, s, i + 1 == opt.n_depth);
      PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    }
    return Status::Ok();
  };
  auto run_pp = [&]() -> Result<double> {
    PAGODA_RETURN_IF_ERROR(reset());
    batch.Clear();
    for (int32_t i = 0; i < opt.n_prompt; ++i) batch.Add(tok(rng), opt.n_depth + i, 0, i + 1 == opt.n_prompt);
    auto t0 = Clock::now();
    PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    return opt.n_prompt / std::chrono::duration<double>(Clock::now() - t0).count();
  };
  auto run_tg = [&]() -> Result<double> {
    PAGODA_RETURN_IF_ERROR(reset());
    auto t0 = Clock::now();
    for (int32_t i = 0; i < opt.n_gen; ++i) {
      batch.Clear();
      for (int32_t s = 0; s < n_par; ++s) batch.Add(tok(rng), opt.n_depth + i, s, true, /*is_decode=*/true);
      PAGODA_RETURN_IF_ERROR(model.Forward(batch, *kv, logits));
    }
    return static_cast<double>(n_par) * opt.n_gen / std::chrono::duration<double>(Clock::now() - t0).count();
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
