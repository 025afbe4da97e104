// kv_integrity_bench: what `--kv-integrity check` costs against `off`.
//
// 1) End to end: N concurrent greedy streams through the Engine (driven by
//    Step() on this thread), rounds of off/check interleaved (the order
//    alternates per round), reporting decode throughput (tokens generated
//    once every stream has its first token, over that time), the p95
//    inter-token latency over that steady decode phase and the median decode
//    step of each run; then the median over rounds of the check/off ratios.
// 2) The check alone at long contexts: a paged KV cache with N sequences of
//    --check-ctx positions each (no model), timing one batched check of all
//    of them, against the median decode step time measured in 1).
//
// Usage: kv_integrity_bench [-m MODEL.gguf] [--streams 32] [--prompt 128]
//        [--gen 64] [--rounds 5] [--threads 2] [--check-ctx 2048]
// Without -m a random-weight model with the demo model's shapes is written
// to the temp directory.
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

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

using bench::Median;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

struct Args {
  std::string model;
  int streams = 32, prompt = 128, gen = 64, rounds = 5, threads = 2, check_ctx = 2048;
};

struct RunFigures {
  double decode_tok_per_s = 0;
  double itl_p95 = 0;
  double step_median = 0;  // seconds per decode-only step
};

RunFigures RunOnce(Model& model, const Args& a, kv::IntegrityMode mode) {
  EngineOptions o;
  o.n_ctx = a.prompt + a.gen + 8;
  o.max_running = a.streams;
  o.max_waiting = a.streams;
  o.max_batch_tokens = 512;
  o.kv_integrity = mode;
  auto engine = Engine::Create(model, o);
  if (!engine.ok()) {
    std::fprintf(stderr, "engine: %s\n", engine.status().ToString().c_str());
    std::exit(1);
  }
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(model.n_vocab()) - 1);
  std::vector<RequestHandle> handles;
  for (int s = 0; s < a.streams; ++s) {
    EngineRequest r;
    r.id = "b" + std::to_string(s);
    for (int i = 0; i < a.prompt; ++i) r.prompt.push_back(tok(rng));
    r.max_tokens = a.gen;
    r.ignore_eog = true;
    r.sampling.temperature = 0;
    handles.push_back(*(*engine)->Submit(std::move(r)));
  }
  std::vector<Clock::time_point> last(a.streams);
  std::vector<int> count(a.streams, 0);
  std::vector<double> itl, steps;
  int started = 0;
  int64_t tokens_after_start = 0;
  Clock::time_point t_start{};
  for (;;) {
    const Clock::time_point t0 = Clock::now();
    if (!(*engine)->Step()) break;
    const Clock::time_point t1 = Clock::now();
    int emitted = 0;
    for (int s = 0; s < a.streams; ++s) {
      while (auto e = handles[s]->TryPop()) {
        if (!e->has_token()) continue;
        ++emitted;
        const bool steady = started == a.streams && t_start != t1;  // every stream decoding
        if (count[s]++ == 0) {
          if (++started == a.streams) t_start = t1;
        } else if (steady) {
          itl.push_back(Seconds(t1 - last[s]));
        }
        last[s] = t1;
        if (steady) ++tokens_after_start;
      }
    }
    if (started == a.streams && t_start != t1 && emitted == a.streams) steps.push_back(Seconds(t1 - t0));
  }
  RunFigures f;
  const double span = Seconds(*std::max_element(last.begin(), last.end()) - t_start);
  f.decode_tok_per_s = span > 0 ? static_cast<double>(tokens_after_start) / span : 0;
  f.itl_p95 = Percentile(itl, 0.95);
  f.step_median = Median(steps);
  if ((*engine)->stats().kv_integrity_failures_total != 0) {
    std::fprintf(stderr, "unexpected KV integrity failure\n");
    std::exit(1);
  }
  return f;
}

// Seconds per batched check of `streams` sequences of ctx positions each.
double TimeCheckAlone(const KvCacheSpec& spec, int streams, int ctx) {
  PagedKvCacheOptions ko;
  ko.n_seq_max = streams;
  ko.n_ctx = ctx;
  ko.block_size = 16;
  ko.type = KvType::kF16;
  ko.memory_bytes = PagedKvCache::BlockBytes(spec, ko.type, ko.block_size) * ((ctx + 15) / 16) * streams;
  ko.integrity = kv::IntegrityMode::kCheck;
  auto kv = PagedKvCache::Create(spec, ko);
  if (!kv.ok()) {
    std::fprintf(stderr, "kv: %s\n", kv.status().ToString().c_str());
    std::exit(1);
  }
  Batch b;
  for (int s = 0; s < streams; ++s) {
    for (int p = 0; p < ctx; ++p) b.Add(1, p, s, false);
  }
  if (!(*kv)->Prepare(b).ok()) std::exit(1);
  std::vector<int32_t> seqs;
  for (int s = 0; s < streams; ++s) seqs.push_back(s);
  std::vector<kv::IntegrityFailure> failures;
  std::vector<double> t;
  for (int rep = 0; rep < 2001; ++rep) {
    failures.clear();
    const auto t0 = Clock::now();
    (*kv)->CheckIntegrity(seqs, &failures);
    t.push_back(Seconds(Clock::now() - t0));
  }
  if (!failures.empty()) std::exit(1);
  return Median(t);
}

int Main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "-m") a.model = next();
    else if (k == "--streams") a.streams = std::atoi(next());
    else if (k == "--prompt") a.prompt = std::atoi(next());
    else if (k == "--gen") a.gen = std::atoi(next());
    else if (k == "--rounds") a.rounds = std::atoi(next());
    else if (k == "--threads") a.threads = std::atoi(next());
    else if (k == "--check-ctx") a.check_ctx = std::atoi(next());
    else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (a.streams < 1 || a.prompt < 1 || a.gen < 2 || a.rounds < 1 || a.threads < 1 || a.check_ctx < 1) {
    std::fprintf(stderr, "--streams, --prompt, --rounds, --threads, --check-ctx >= 1 and --gen >= 2\n");
    return 2;
  }
  if (a.model.empty()) {
    RandomModelSpec spec;  // the shapes of `pagoda serve`'s demo model
    spec.n_embd = 512;
    spec.n_layer = 4;
    spec.n_head = 8;
    spec.n_head_kv = 4;
    spec.n_ff = 1408;
    spec.n_vocab = 4096;
    spec.weight_type = DType::kQ8_0;
    spec.seed = 42;
    a.model = (std::filesystem::temp_directory_path() / "pagoda_kv_integrity_bench.gguf").string();
    if (Status st = WriteRandomModel(spec, a.model); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  auto file = GgufFile::Open(a.model);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n", file.status().ToString().c_str());
    return 1;
  }
  std::shared_ptr<const GgufFile> shared(std::move(file).value());
  ThreadPool pool(a.threads);
  auto model = LoadModel(shared, pool);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  std::printf("model %s, %d streams, prompt %d, gen %d, %d threads, %d rounds (off/check interleaved)\n",
              a.model.c_str(), a.streams, a.prompt, a.gen, a.threads, a.rounds);
  std::printf("| round | mode | decode tok/s | p95 ITL ms | median step ms |\n| ---: | --- | ---: | ---: | ---: |\n");
  std::vector<double> tput_ratio, itl_ratio, step_ratio, step_off;
  RunOnce(**model, a, kv::IntegrityMode::kOff);  // warm-up
  for (int r = 0; r < a.rounds; ++r) {
    RunFigures off, check;
    for (int k = 0; k < 2; ++k) {
      const bool check_now = (k == 0) == (r % 2 == 1);
      RunFigures f = RunOnce(**model, a, check_now ? kv::IntegrityMode::kCheck : kv::IntegrityMode::kOff);
      std::printf("| %d | %s | %.1f | %.2f | %.2f |\n", r, check_now ? "check" : "off", f.decode_tok_per_s,
                  f.itl_p95 * 1e3, f.step_median * 1e3);
      std::fflush(stdout);
      (check_now ? check : off) = f;
    }
    tput_ratio.push_back(check.decode_tok_per_s / off.decode_tok_per_s);
    itl_ratio.push_back(check.itl_p95 / off.itl_p95);
    step_ratio.push_back(check.step_median / off.step_median);
    step_off.push_back(off.step_median);
  }
  std::printf("median check/off over %d rounds: decode throughput %.4f, p95 inter-token latency %.4f, "
              "median decode step %.4f\n",
              a.rounds, Median(tput_ratio), Median(itl_ratio), Median(step_ratio));
  const double check_s = TimeCheckAlone((*model)->kv_cache_spec(), a.streams, a.check_ctx);
  const double step_s = Median(step_off);
  std::printf("check alone: %d sequences x %d positions (%d blocks each): %.2f us per step = %.3f%% of the "
              "median decode step (%.2f ms)\n",
              a.streams, a.check_ctx, (a.check_ctx + 15) / 16, check_s * 1e6, 100 * check_s / step_s, step_s * 1e3);
  return 0;
}

}  // namespace
}  // namespace pagoda

int main(int argc, char** argv) { return pagoda::Main(argc, argv); }
