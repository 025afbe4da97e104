// rerank_bench: reranking N candidates against a shared query prefix as one
// request (PrefillTask::suffixes: the prefix computed once, the candidates
// adopting its blocks, the ranking made in the engine) against N independent
// score requests (each its own cache salt, so nothing is shared, as N
// separate clients on a server without prefix caching), and against N
// concurrent requests sharing the prefix cache (what prefix caching alone
// gives when they arrive together). A decoder reranker: the score is P(yes)
// at the last position, as Qwen3-Reranker's.
//
// The model is a random-weight decoder (Qwen3-0.6B-like width, fewer layers
// by default so a run takes a minute on 2 cores) unless --model names one.
// Modes are interleaved --reps times; the report is each mode's median wall
// time and the ratios.
//
// Usage: rerank_bench [--model M.gguf] [--candidates 100] [--prefix 512] [--candidate-tokens 64]
//                     [--reps 3] [--threads 2] [--layers 4]
#include "bench_stats.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/engine.h"
#include "gguf/gguf_file.h"
#include "model/random_model.h"

namespace pagoda {
namespace {

using Clock = std::chrono::steady_clock;

using bench::Median;

struct Args {
  std::string model;
  int candidates = 100, prefix = 512, candidate_tokens = 64, reps = 3, threads = 2, layers = 4;
};

EngineRequest ScoreRequest(const std::vector<TokenId>& prompt, std::vector<std::vector<TokenId>> suffixes,
                           const std::string& salt) {
  EngineRequest r;
  r.id = "bench";
  r.prompt = prompt;
  r.max_tokens = 0;
  r.cache_salt = salt;
  PrefillTask t;
  t.kind = PrefillTask::Kind::kScore;
  t.score_yes = 100;
  t.score_no = 200;
  t.suffixes = std::move(suffixes);
  r.n = static_cast<int32_t>(t.suffixes.size());
  r.prefill = std::move(t);
  return r;
}

// Submits every request, waits for all; seconds.
double RunAll(Engine& engine, std::vector<EngineRequest> requests) {
  const auto t0 = Clock::now();
  std::vector<RequestHandle> hs;
  for (auto& r : requests) {
    auto h = engine.Submit(std::move(r));
    if (!h.ok()) {
      std::fprintf(stderr, "submit: %s\n", h.status().ToString().c_str());
      std::exit(1);
    }
    hs.push_back(*h);
  }
  for (auto& h : hs) {
    while (auto e = h->Pop()) {
      if (e->finish == FinishReason::kError) {
        std::fprintf(stderr, "error: %s\n", e->error.ToString().c_str());
        std::exit(1);
      }
    }
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int Main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--model") a.model = v;
    else if (k == "--candidates") a.candidates = std::atoi(v);
    else if (k == "--prefix") a.prefix = std::atoi(v);
    else if (k == "--candidate-tokens") a.candidate_tokens = std::atoi(v);
    else if (k == "--reps") a.reps = std::atoi(v);
    else if (k == "--threads") a.threads = std::atoi(v);
    else if (k == "--layers") a.layers = std::atoi(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.candidates < 1 || a.prefix < 1 || a.candidate_tokens < 1 || a.reps < 1 || a.threads < 1 || a.layers < 1) {
    std::fprintf(stderr, "every option must be >= 1\n");
    return 2;
  }
  std::string path = a.model;
  if (path.empty()) {
    RandomModelSpec spec;  // Qwen3-0.6B's width, a.layers layers
    spec.arch = "qwen3";
    spec.n_embd = 1024;
    spec.n_layer = a.layers;
    spec.n_head = 16;
    spec.n_head_kv = 8;
    spec.head_dim = 128;
    spec.n_ff = 3072;
    spec.n_vocab = 4096;
    spec.weight_type = DType::kQ8_0;
    spec.seed = 7;
    path = (std::filesystem::temp_directory_path() / "pagoda_rerank_bench.gguf").string();
    if (Status st = WriteRandomModel(spec, path); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  ThreadPool pool(a.threads);
  auto model = LoadModel(path, pool);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  const int64_t n_vocab = (*model)->n_vocab();
  std::mt19937 rng(1);
  std::uniform_int_distribution<TokenId> tok(3, static_cast<TokenId>(std::min<int64_t>(n_vocab, 30000)) - 1);
  std::vector<TokenId> prefix(static_cast<size_t>(a.prefix));
  for (auto& t : prefix) t = tok(rng);
  std::vector<std::vector<TokenId>> suffixes(static_cast<size_t>(a.candidates));
  for (auto& s : suffixes) {
    s.resize(static_cast<size_t>(a.candidate_tokens));
    for (auto& t : s) t = tok(rng);
  }
  EngineOptions o;
  o.n_ctx = a.prefix + a.candidate_tokens + 16;
  o.max_running = 16;
  o.max_waiting = std::max(256, a.candidates * 2);
  o.max_batch_tokens = 512;
  auto engine = Engine::Create(**model, o);
  if (!engine.ok()) {
    std::fprintf(stderr, "%s\n", engine.status().ToString().c_str());
    return 1;
  }
  (*engine)->Start();
  std::vector<double> ranked, independent, shared_cache;
  int salt = 0;
  for (int rep = 0; rep < a.reps; ++rep) {
    // Fresh salts every time: no mode reuses what an earlier one cached.
    ranked.push_back(RunAll(**engine, [&] {
      std::vector<EngineRequest> v;
      v.push_back(ScoreRequest(prefix, suffixes, "r" + std::to_string(salt++)));
      return v;
    }()));
    independent.push_back(RunAll(**engine, [&] {
      std::vector<EngineRequest> v;
      for (const auto& s : suffixes) v.push_back(ScoreRequest(prefix, {s}, "i" + std::to_string(salt++)));
      return v;
    }()));
    const std::string shared = "c" + std::to_string(salt++);
    shared_cache.push_back(RunAll(**engine, [&] {
      std::vector<EngineRequest> v;
      for (const auto& s : suffixes) v.push_back(ScoreRequest(prefix, {s}, shared));
      return v;
    }()));
    std::printf("rep %d: ranked %.2f s, independent %.2f s, concurrent with prefix cache %.2f s\n", rep,
                ranked.back(), independent.back(), shared_cache.back());
  }
  (*engine)->Stop();
  const double r = Median(ranked), i = Median(independent), c = Median(shared_cache);
  std::printf("\n%d candidates x %d tokens after a %d-token prefix, %d threads, model %s\n", a.candidates,
              a.candidate_tokens, a.prefix, a.threads, a.model.empty() ? "random qwen3 (1024 wide, Q8_0)" : a.model.c_str());
  std::printf("| mode | median s | tokens computed/s | speedup of ranked |\n|---|---|---|---|\n");
  const double tokens_ranked = a.prefix + double(a.candidates) * a.candidate_tokens;
  const double tokens_all = double(a.candidates) * (a.prefix + a.candidate_tokens);
  std::printf("| one rerank request (prefix once) | %.2f | %.0f | 1.00 |\n", r, tokens_ranked / r);
  std::printf("| %d independent score requests | %.2f | %.0f | %.2f |\n", a.candidates, i, tokens_all / i, i / r);
  std::printf("| %d concurrent requests, shared prefix cache | %.2f | - | %.2f |\n", a.candidates, c, c / r);
  return 0;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) { return pagoda::Main(argc, argv); }
