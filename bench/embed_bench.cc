// embed_bench: embedding throughput of the engine on a bert-base-shaped
// random-weight encoder (12 layers, 768 wide, 12 heads, FFN 3072, a
// 30522-token WordPiece-sized vocabulary), N concurrent requests of T tokens
// each (issue 19: 64 x 128), in tokens/s, with the fraction of this
// machine's measured f32 FMA peak the forward's matrix FLOPs reach.
// --model embeds with any model instead (a decoder too: last-token pooling).
// Rounds are repeated --reps times; the report is the median.
//
// Usage: embed_bench [--model M.gguf] [--requests 64] [--tokens 128] [--reps 3] [--threads 2]
//                    [--type f16|q8_0|f32] [--max-batch-tokens 2048]
#include "bench_stats.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/compute_peak.h"
#include "base/thread_pool.h"
#include "engine/engine.h"
#include "model/random_model.h"

namespace pagoda {
namespace {

using Clock = std::chrono::steady_clock;

using bench::Median;

int Main(int argc, char** argv) {
  std::string model_path, type = "f16";
  int requests = 64, tokens = 128, reps = 3, threads = 2, max_batch = 2048;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--model") model_path = v;
    else if (k == "--requests") requests = std::atoi(v);
    else if (k == "--tokens") tokens = std::atoi(v);
    else if (k == "--reps") reps = std::atoi(v);
    else if (k == "--threads") threads = std::atoi(v);
    else if (k == "--type") type = v;
    else if (k == "--max-batch-tokens") max_batch = std::atoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (requests < 1 || tokens < 2 || reps < 1 || threads < 1 || max_batch < tokens) {
    std::fprintf(stderr, "--requests, --reps, --threads >= 1, --tokens >= 2, --max-batch-tokens >= --tokens\n");
    return 2;
  }
  RandomModelSpec spec;
  if (Status st = ApplyRandomModelPreset("bert-base", spec); !st.ok()) {  // CLS pooling
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  spec.weight_type = type == "q8_0" ? DType::kQ8_0 : type == "f32" ? DType::kF32 : DType::kF16;
  spec.seed = 3;
  if (model_path.empty()) {
    model_path = (std::filesystem::temp_directory_path() / ("pagoda_embed_bench_" + type + ".gguf")).string();
    if (Status st = WriteRandomModel(spec, model_path); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  ThreadPool pool(threads);
  ModelOptions mo;
  mo.max_batch_tokens = max_batch;
  auto model = LoadModel(model_path, pool, mo);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  const ModelConfig& c = (*model)->config();
  EngineOptions o;
  o.n_ctx = static_cast<int32_t>(std::min<int64_t>(c.n_ctx_train, 4096));
  o.max_running = requests;
  o.max_waiting = requests * 2;
  o.max_batch_tokens = max_batch;
  o.prefix_caching = (*model)->causal();
  auto engine = Engine::Create(**model, o);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return 1;
  }
  (*engine)->Start();
  std::mt19937 rng(9);
  std::uniform_int_distribution<TokenId> tok(1000, static_cast<TokenId>(std::min<int64_t>(c.n_vocab, 30000)) - 1);
  std::vector<double> secs;
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<RequestHandle> hs;
    const auto t0 = Clock::now();
    for (int r = 0; r < requests; ++r) {
      EngineRequest req;
      req.id = "e";
      req.prompt.resize(static_cast<size_t>(tokens));
      for (auto& t : req.prompt) t = tok(rng);  // fresh text every round: nothing cached
      req.max_tokens = 0;
      PrefillTask t;
      t.pooling = (*model)->causal() ? PoolingType::kLast : PoolingType::kCls;
      req.prefill = t;
      auto h = (*engine)->Submit(std::move(req));
      if (!h.ok()) {
        std::fprintf(stderr, "%s\n", h.status().ToString().c_str());
        return 1;
      }
      hs.push_back(*h);
    }
    for (auto& h : hs) {
      while (auto e = h->Pop()) {
        if (e->finish == FinishReason::kError) {
          std::fprintf(stderr, "%s\n", e->error.ToString().c_str());
          return 1;
        }
      }
    }
    secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    std::printf("rep %d: %.3f s, %.0f tokens/s\n", rep, secs.back(), requests * double(tokens) / secs.back());
  }
  (*engine)->Stop();
  const double s = Median(secs);
  const double tps = requests * double(tokens) / s;
  // Matrix FLOPs per token: Q, K, V, O and the FFN, plus attention over the
  // sequence (scores and weighted sum: 2 x 2 x T x n_embd per layer, halved
  // for a causal decoder).
  const double d = double(c.n_embd), f = double(c.n_ff), L = double(c.n_layer);
  const double attn = 4.0 * tokens * d * ((*model)->causal() ? 0.5 : 1.0);
  const double flops_token = L * (2.0 * 4.0 * d * d + 2.0 * 2.0 * d * f + attn);
  const ComputePeak peak = MeasureComputePeak(pool);
  std::printf("\n%s, %d requests x %d tokens, %d threads, max batch %d tokens\n",
              model_path.c_str(), requests, tokens, threads, max_batch);
  std::printf("median %.3f s: %.0f tokens/s; %.2f GFLOP/token -> %.1f GFLOP/s = %.0f%% of the f32 FMA peak (%.1f GFLOP/s)\n",
              s, tps, flops_token / 1e9, tps * flops_token / 1e9, 100.0 * tps * flops_token / peak.f32_fma_flops,
              peak.f32_fma_flops / 1e9);
  return 0;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) { return pagoda::Main(argc, argv); }
